// Single-precision libdevice math; also built with --use_fast_math as a separate case.
extern "C" __global__ void float_math(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[t], y = b[t];
    float* o = out + t * 16;
    o[0] = x / y;
    o[1] = sqrtf(fabsf(x));
    o[2] = expf(x);
    o[3] = logf(fabsf(y) + 1.0f);
    o[4] = sinf(x);
    o[5] = cosf(y);
    o[6] = powf(fabsf(x), y);
    o[7] = erff(x);
    o[8] = tanhf(y);
    o[9] = cbrtf(x);
    o[10] = expm1f(x * 0.1f);
    o[11] = log1pf(fabsf(x));
    o[12] = hypotf(x, y);
    o[13] = fmodf(x, y);
    o[14] = sinpif(x) + atanf(y);
    o[15] = lgammaf(fabsf(x) + 0.5f);
}
