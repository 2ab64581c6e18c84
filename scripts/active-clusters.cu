// How many clusters of 1 to 16 CTAs run at once on this GPU (cudaOccupancyMaxActiveClusters)
// for a 384-thread kernel at four dynamic shared-memory sizes: the figures of
// Target::active_clusters (targets/src/known.rs). Build and run on the GPU machine:
//   nvcc -arch=sm_90a -o active-clusters scripts/active-clusters.cu && ./active-clusters
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k(float *p) { extern __shared__ float s[]; if (p) p[threadIdx.x] = s[threadIdx.x]; }
int main() {
  int smems[] = {100 << 10, 150 << 10, 200 << 10, 227 << 10};
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 << 10);
  cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  for (int smem : smems) {
    printf("smem %d KB:", smem >> 10);
    for (int c = 1; c <= 16; c *= 2) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(c * 64); cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem;
      cudaLaunchAttribute a; a.id = cudaLaunchAttributeClusterDimension; a.val.clusterDim.x = c; a.val.clusterDim.y = 1; a.val.clusterDim.z = 1;
      cfg.attrs = &a; cfg.numAttrs = 1;
      int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
      printf("  %d:%d(%d CTAs)%s", c, n, n * c, e ? cudaGetErrorString(e) : "");
    }
    printf("\n");
  }
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s SMs %d\n", p.name, p.multiProcessorCount);
}
