extern "C" __global__ void k2(int *p, int n) { if (p) p[0] = n; }
extern "C" __global__ void k4(int *p, int n, float a, double b) { if (p) p[0] = n + (int)a + (int)b; }
