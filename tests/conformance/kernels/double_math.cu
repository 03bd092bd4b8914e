// Double-precision arithmetic and libdevice math (div, sqrt, exp, log, trig, pow, fma, rsqrt, atan2, cbrt).
extern "C" __global__ void double_math(const double* __restrict__ a, const double* __restrict__ b,
                                       double* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double x = a[t], y = b[t];
    double* o = out + t * 14;
    o[0] = x + y;
    o[1] = x * y;
    o[2] = x / y;
    o[3] = sqrt(fabs(x));
    o[4] = exp(x * 0.01);
    o[5] = log(fabs(y) + 1.0);
    o[6] = sin(x);
    o[7] = cos(y);
    o[8] = pow(fabs(x), 0.37);
    o[9] = fma(x, y, 1.0);
    o[10] = rsqrt(fabs(x) + 1.0);
    o[11] = atan2(x, y);
    o[12] = cbrt(x);
    o[13] = (double)(long long)(x * 1e6) + __dadd_rz(x, y) + __dmul_ru(x, y) + __drcp_rn(y);
}
