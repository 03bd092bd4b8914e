/* texture: a texture object over a pitch-linear image, sampled by the fixture kernel
 * `tex_fetch_2d` (out[y][x] = tex(x, y) + 2 * tex(x - 3, y + 2), nearest texel, clamped in x,
 * a border color in y), checked on the CPU.
 * usage: texture [device-spec]
 * In a kernel the texture is a `cudaTextureObject_t` (unsigned long long) parameter; the value
 * to pass is tg_texture_handle()'s. */
#include "common.h"

enum { W = 300, H = 70, PITCH = 1280 }; /* PITCH: a multiple of 32, at least W * 4 */
#define BORDER 0.25f

/* The image: value(x, y) at row y, column x. */
static float value(int x, int y) { return (float)((x * 7 + y * 13) % 101) - 50.0f; }

/* What the texture returns for texel (x, y). */
static float texel(int x, int y) {
    if (y < 0 || y >= H) return BORDER;           /* TG_ADDRESS_BORDER */
    if (x < 0) x = 0;                             /* TG_ADDRESS_CLAMP */
    if (x >= W) x = W - 1;
    return value(x, y);
}

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    char path[4096];
    tg_module *mod = NULL;
    tg_kernel *k = NULL;
    tg_queue *q = NULL;
    tg_buf *image = NULL, *out = NULL;
    tg_texture *tex = NULL;
    tg_texture_desc d;
    float *img, *po;
    uint64_t handle, va_out;
    unsigned w = W, h = H, x, y, errors = 0;
    void *args[4];
    tg_launch_config cfg;

    fixture_cubin(&info, path, sizeof path);
    CHECK(tg_module_load_file(dev, path, &mod));
    CHECK(tg_module_get_kernel(mod, "tex_fetch_2d", &k));
    CHECK(tg_buf_alloc(dev, (uint64_t)PITCH * H, 0, &image));
    CHECK(tg_buf_alloc(dev, (uint64_t)W * H * 4, TG_BUF_ZEROED, &out));
    img = buf_ptr(image);
    for (y = 0; y < H; y++)
        for (x = 0; x < W; x++) img[y * (PITCH / 4) + x] = value((int)x, (int)y);

    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.kind = TG_TEXTURE_PITCH2D;
    d.format = TG_TEXTURE_FORMAT_F32;
    d.channels = 1;
    d.address_mode[0] = TG_ADDRESS_CLAMP;
    d.address_mode[1] = TG_ADDRESS_BORDER;
    d.border_color[0] = BORDER;
    d.width = W;
    d.height = H;
    d.pitch_bytes = PITCH;
    CHECK(tg_texture_create(image, &d, &tex));
    CHECK(tg_texture_handle(tex, &handle));
    /* The texture keeps its memory: the buffer handle is not needed any more (nor may its CPU
     * pointer be used after this). */
    CHECK(tg_buf_free(image));

    va_out = buf_va(out);
    args[0] = &handle; args[1] = &va_out; args[2] = &w; args[3] = &h;
    cfg = launch_config((W + 63) / 64, H, 64, 1, 0);
    CHECK(tg_queue_create(dev, TG_QUEUE_COMPUTE, &q));
    CHECK(tg_launch_args(q, k, &cfg, args, 4));
    CHECK(tg_queue_submit(q));
    CHECK(tg_queue_synchronize(q, TIMEOUT_NS));

    po = buf_ptr(out);
    for (y = 0; y < H; y++)
        for (x = 0; x < W; x++) {
            float want = texel((int)x, (int)y) + 2.0f * texel((int)x - 3, (int)y + 2);
            if (po[y * W + x] != want) {
                if (errors < 10)
                    fprintf(stderr, "out[%u][%u] = %g, want %g\n", y, x, (double)po[y * W + x],
                            (double)want);
                errors++;
            }
        }

    CHECK(tg_queue_destroy(q));
    CHECK(tg_texture_destroy(tex));
    CHECK(tg_kernel_destroy(k));
    CHECK(tg_module_destroy(mod));
    CHECK(tg_buf_free(out));
    CHECK(tg_device_close(dev));
    if (errors) {
        fprintf(stderr, "texture: FAIL, %u of %u texels wrong\n", errors, W * H);
        return 1;
    }
    printf("texture: OK (%u x %u texels sampled on %s)\n", W, H,
           info.emulated ? "the emulated Orin" : info.name);
    return 0;
}
