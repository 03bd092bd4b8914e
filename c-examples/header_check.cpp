// The public header must compile as strict C++ (-std=c++11 -Wall -Wextra -Werror -pedantic) and
// link against the library.
#include "tegragpu.h"

#include <cstdio>

int main() {
    tg_device_info info = {};
    info.struct_size = sizeof info;
    tg_launch_config cfg = {sizeof(tg_launch_config), {1, 1, 1}, {32, 1, 1}, 0, 0, {0, 0, 0}};
    (void)cfg;
    tg_status st = TG_ERROR_INVALID_HANDLE;
    std::printf("%s\n", tg_status_str(st));
    // A NULL device handle is rejected with a status, not a crash.
    st = tg_device_get_info(nullptr, &info);
    return (st == TG_ERROR_INVALID_HANDLE && (tg_version() >> 16) == TG_VERSION_MAJOR) ? 0 : 1;
}
