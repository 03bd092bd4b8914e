/* Reads facts from NVIDIA's libcuda on the device machine, for the libcuda facade (cuda/):
 * which names cuGetProcAddress_v2 resolves, to which exported symbol, per CUDA version and flags;
 * every device attribute's value; error names. Build and run there:
 *   gcc -O1 -o collect tools/cuda-facts/collect.c -ldl && ./collect exports.txt OUTDIR
 * exports.txt: one exported name per line (nm -D --defined-only). No CUDA header needed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*init_t)(unsigned);
typedef int (*ver_t)(int *);
typedef int (*gpa_t)(const char *, void **, int, uint64_t, int *);
typedef int (*cnt_t)(int *);
typedef int (*get_t)(int *, int);
typedef int (*attr_t)(int *, int, int);
typedef int (*name_t)(char *, int, int);
typedef int (*mem_t)(size_t *, int);
typedef int (*uuid_t_)(unsigned char *, int);
typedef int (*errn_t)(int, const char **);
typedef int (*pci_t)(char *, int, int);

static const char *suffixes[] = {"_v2", "_v3", "_v4", "_v5", "_v6", "_v7", "_ptds", "_ptsz", NULL};

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: collect exports.txt outdir\n"); return 2; }
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  init_t cuInit = (init_t)dlsym(h, "cuInit");
  ver_t cuDriverGetVersion = (ver_t)dlsym(h, "cuDriverGetVersion");
  gpa_t gpa = (gpa_t)dlsym(h, "cuGetProcAddress_v2");
  int rc = cuInit(0);
  int drv = 0;
  cuDriverGetVersion(&drv);
  char path[4096];
  snprintf(path, sizeof path, "%s/procaddr.tsv", argv[2]);
  FILE *out = fopen(path, "w");
  fprintf(out, "# cuInit=%d cuDriverGetVersion=%d\n", rc, drv);
  fprintf(out, "# query\tflags\tfrom_version\tto_version\tcuresult\tsymbol_status\tresolved_symbol\n");
  /* Query names: every export, and every export with a version suffix stripped. */
  FILE *ex = fopen(argv[1], "r");
  char line[512];
  char **names = NULL; size_t n = 0, cap = 0;
  while (fgets(line, sizeof line, ex)) {
    line[strcspn(line, "\r\n ")] = 0;
    if (!line[0]) continue;
    for (int pass = 0; pass < 2; pass++) {
      char buf[512]; strcpy(buf, line);
      if (pass == 1) {
        int stripped = 0;
        for (int again = 1; again;) {
          again = 0;
          for (const char **s = suffixes; *s; s++) {
            size_t L = strlen(buf), l = strlen(*s);
            if (L > l && !strcmp(buf + L - l, *s)) { buf[L - l] = 0; again = 1; stripped = 1; }
          }
        }
        if (!stripped) continue;
      }
      int dup = 0;
      for (size_t i = 0; i < n; i++) if (!strcmp(names[i], buf)) { dup = 1; break; }
      if (dup) continue;
      if (n == cap) { cap = cap ? cap * 2 : 1024; names = realloc(names, cap * sizeof *names); }
      names[n++] = strdup(buf);
    }
  }
  static const uint64_t flagset[] = {0, 1, 2};
  for (size_t i = 0; i < n; i++) {
    for (int f = 0; f < 3; f++) {
      char prev[600] = "";
      int start = -1, last = -1;
      for (int v = 1000; v <= 13200; v += 10) {
        void *p = NULL; int st = -1;
        int r = gpa(names[i], &p, v, flagset[f], &st);
        const char *sym = "-";
        Dl_info info;
        char cur[600];
        if (p) { if (dladdr(p, &info) && info.dli_sname && info.dli_saddr == p) sym = info.dli_sname; else sym = "?"; }
        snprintf(cur, sizeof cur, "%d\t%d\t%s", r, st, sym);
        if (start < 0) { strcpy(prev, cur); start = v; }
        else if (strcmp(cur, prev)) {
          fprintf(out, "%s\t%llu\t%d\t%d\t%s\n", names[i], (unsigned long long)flagset[f], start, last, prev);
          strcpy(prev, cur); start = v;
        }
        last = v;
      }
      fprintf(out, "%s\t%llu\t%d\t%d\t%s\n", names[i], (unsigned long long)flagset[f], start, last, prev);
    }
  }
  fclose(out);
  /* Devices and attributes. */
  snprintf(path, sizeof path, "%s/devices.tsv", argv[2]);
  out = fopen(path, "w");
  int count = 0;
  ((cnt_t)dlsym(h, "cuDeviceGetCount"))(&count);
  fprintf(out, "driver_version\t%d\ndevice_count\t%d\n", drv, count);
  for (int d = 0; d < count; d++) {
    int dev = 0;
    ((get_t)dlsym(h, "cuDeviceGet"))(&dev, d);
    char name[256] = ""; ((name_t)dlsym(h, "cuDeviceGetName"))(name, sizeof name, dev);
    size_t mem = 0; ((mem_t)dlsym(h, "cuDeviceTotalMem_v2"))(&mem, dev);
    unsigned char u[16] = {0}; ((uuid_t_)dlsym(h, "cuDeviceGetUuid_v2"))(u, dev);
    char pci[64] = ""; ((pci_t)dlsym(h, "cuDeviceGetPCIBusId"))(pci, sizeof pci, dev);
    fprintf(out, "device\t%d\tname\t%s\n", d, name);
    fprintf(out, "device\t%d\ttotal_mem\t%zu\n", d, mem);
    fprintf(out, "device\t%d\tpci_bus_id\t%s\n", d, pci);
    fprintf(out, "device\t%d\tuuid\t", d);
    for (int k = 0; k < 16; k++) fprintf(out, "%02x", u[k]);
    fprintf(out, "\n");
    for (int a = 0; a < 400; a++) {
      int val = 0;
      int r = ((attr_t)dlsym(h, "cuDeviceGetAttribute"))(&val, a, dev);
      fprintf(out, "attr\t%d\t%d\t%d\t%d\n", d, a, r, val);
    }
  }
  fclose(out);
  snprintf(path, sizeof path, "%s/errors.tsv", argv[2]);
  out = fopen(path, "w");
  for (int e = 0; e < 1100; e++) {
    const char *s = NULL;
    if (((errn_t)dlsym(h, "cuGetErrorName"))(e, &s) == 0 && s) fprintf(out, "%d\t%s\n", e, s);
  }
  fclose(out);
  return 0;
}
