// tilec: hand-written Hopper BF16 GEMM, the template for the nv -> MLIR lowering.
//
//   C[M, N] (bf16, row-major) = A[M, K] (bf16, K contiguous) * B[N, K]^T (bf16, K contiguous)
//   FP32 accumulation in registers.
//
// Launch contract (also in docs/backend.md, "Manifest facts"):
//   entry        gemm_bf16_tma_wgmma
//   params       (tma_a: 128-byte CUtensorMap, grid constant,
//                 tma_b: 128-byte CUtensorMap, grid constant,
//                 c: global pointer to C, m: i32, n: i32, k: i32)
//   block        (128, 1, 1)       one warpgroup
//   grid         (ceil(N/128), ceil(M/128), 1)   blockIdx.x walks N tiles, blockIdx.y walks M tiles
//   dynamic smem 32776 bytes: A tile [0, 16384), B tile [16384, 32768), mbarrier [32768, 32776)
//   TMA A        dims {K, M}, box {64, 128}, bf16, SWIZZLE_128B, OOB fill zero
//   TMA B        dims {K, N}, box {64, 128}, bf16, SWIZZLE_128B, OOB fill zero
//
// Schedule: single stage. Each K iteration (BLOCK_K = 64): thread 0 arms the mbarrier with the
// byte count of both tiles and issues two TMA loads; every thread waits on the mbarrier phase
// (parity = iteration & 1); the warpgroup issues 4 (k16 steps) x 2 (m64 halves) wgmma
// m64n128k16, commits and waits for them, then a CTA barrier frees the tiles for the next load.
//
// Kernel parameters are plain !llvm.ptr / i32 (nvgpu types on a gpu.func do not legalise, see
// DESIGN section 4). `tilec.tma_params` lists the TMA-descriptor parameters; tilec's back end
// turns them into byval [128 x i8], align 64, nvvm.grid_constant parameters after
// convert-gpu-to-nvvm (src/backend/kernel_abi.rs), which keeps only llvm.* argument attributes.
// TMA and mbarriers use nvvm ops directly (what convert-nvgpu-to-nvvm would produce), so they
// can take plain pointers into the dynamic shared memory; see docs/backend.md.

// One m64n128 FP32 accumulator fragment: 64 registers per thread (N / 2).
!acc = !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>

module attributes {gpu.container_module} {
  gpu.module @tilec_kernels {
    // Dynamic shared memory. `gpu.dynamic_shared_memory` would lower to an internal zero-length
    // global that may overlap static shared memory; an external [0 x i8] in address space 3 is
    // PTX's `.extern .shared` array, i.e. exactly the dynamic allocation. Align 1024 because the
    // 128-byte swizzle pattern repeats every 8 rows x 128 bytes and both TMA and wgmma compute
    // it from absolute shared addresses (descriptor base_offset = 0 assumes this alignment).
    llvm.mlir.global external @__tilec_dyn_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>

    gpu.func @gemm_bf16_tma_wgmma(%tma_a: !llvm.ptr,
                                  %tma_b: !llvm.ptr,
                                  %c: !llvm.ptr {llvm.noalias}, %m: i32, %n: i32, %k: i32) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>, tilec.tma_params = array<i32: 0, 1>} {
      %c0_i32 = arith.constant 0 : i32
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c3_i32 = arith.constant 3 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c16_i32 = arith.constant 16 : i32
      %c5_i32 = arith.constant 5 : i32
      %c31_i32 = arith.constant 31 : i32
      %c63_i32 = arith.constant 63 : i32
      %c64_i32 = arith.constant 64 : i32
      %c128_i32 = arith.constant 128 : i32
      // expect_tx byte count: A tile + B tile = 2 * 128 * 64 * 2 bytes. TMA counts the whole
      // box even where it is out of bounds (the zero fill is delivered too).
      %tile_bytes = arith.constant 32768 : i32
      // mbarrier.try_wait suspend-time hint (ns), as upstream nvgpu uses.
      %ticks = arith.constant 10000000 : i32

      %tid_idx = gpu.thread_id x
      %tid = arith.index_cast %tid_idx : index to i32
      %bx_idx = gpu.block_id x
      %by_idx = gpu.block_id y
      %bx = arith.index_cast %bx_idx : index to i32
      %by = arith.index_cast %by_idx : index to i32
      %n0 = arith.muli %bx, %c128_i32 : i32
      %m0 = arith.muli %by, %c128_i32 : i32
      %is_leader = arith.cmpi eq, %tid, %c0_i32 : i32

      // ---- Shared memory carve-up (byte offsets into the dynamic allocation). ----
      %smem = llvm.mlir.addressof @__tilec_dyn_smem : !llvm.ptr<3>
      %s_a = llvm.getelementptr %smem[0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
      %s_b = llvm.getelementptr %smem[16384] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
      %bar = llvm.getelementptr %smem[32768] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
      // TMA destinations are shared::cluster addresses (address space 7); a CTA's own shared
      // window is valid there.
      %s_a_cl = llvm.addrspacecast %s_a : !llvm.ptr<3> to !llvm.ptr<7>
      %s_b_cl = llvm.addrspacecast %s_b : !llvm.ptr<3> to !llvm.ptr<7>

      // One arrival (the leader's arrive.expect_tx) completes a phase once the bytes land.
      scf.if %is_leader {
        nvvm.mbarrier.init %bar, %c1_i32 : !llvm.ptr<3>, i32
        // Make the initialised barrier visible to the async proxy (TMA) before first use.
        nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      }
      gpu.barrier

      // ---- wgmma shared-memory matrix descriptors (PTX ISA "Matrix Descriptor Format"). ----
      //   bits  0-13  start address >> 4
      //   bits 16-29  leading-dimension byte offset >> 4: unused for swizzled K-major; 1 by convention
      //   bits 32-45  stride-dimension byte offset >> 4: 1024 B between 8-row core-matrix groups = 64
      //   bits 49-51  base offset: 0 (tiles are 1024-byte aligned)
      //   bits 62-63  swizzle mode: 1 = 128-byte swizzle
      // Each tile row is 64 bf16 = 128 bytes, exactly one swizzle row, so a k16 step (32 bytes)
      // advances the start address by 32 B (+2 in the >>4 field) and the hardware applies the
      // XOR swizzle on the final address; the second m64 half of A starts 64 rows = 8192 B on.
      %desc_hi = arith.constant 4611686293305360384 : i64   // (1 << 62) | (64 << 32) | (1 << 16)
      %addr_mask = arith.constant 262143 : i64              // 18-bit shared address
      %c4_i64 = arith.constant 4 : i64
      %c0_i64 = arith.constant 0 : i64
      %s_a_int = llvm.ptrtoint %s_a : !llvm.ptr<3> to i64
      %s_b_int = llvm.ptrtoint %s_b : !llvm.ptr<3> to i64
      %s_a_m = arith.andi %s_a_int, %addr_mask : i64
      %s_b_m = arith.andi %s_b_int, %addr_mask : i64
      %s_a_f = arith.shrui %s_a_m, %c4_i64 : i64
      %s_b_f = arith.shrui %s_b_m, %c4_i64 : i64
      %desc_a = arith.ori %s_a_f, %desc_hi : i64
      %desc_b = arith.ori %s_b_f, %desc_hi : i64
      %d2 = arith.constant 2 : i64       // +32 B: next k16 step
      %d4 = arith.constant 4 : i64
      %d6 = arith.constant 6 : i64
      %d512 = arith.constant 512 : i64   // +8192 B: rows 64..127 of A
      %da_0 = arith.addi %desc_a, %c0_i64 : i64
      %da_1 = arith.addi %desc_a, %d2 : i64
      %da_2 = arith.addi %desc_a, %d4 : i64
      %da_3 = arith.addi %desc_a, %d6 : i64
      %da_h1_0 = arith.addi %da_0, %d512 : i64
      %da_h1_1 = arith.addi %da_1, %d512 : i64
      %da_h1_2 = arith.addi %da_2, %d512 : i64
      %da_h1_3 = arith.addi %da_3, %d512 : i64
      %db_0 = arith.addi %desc_b, %c0_i64 : i64
      %db_1 = arith.addi %desc_b, %d2 : i64
      %db_2 = arith.addi %desc_b, %d4 : i64
      %db_3 = arith.addi %desc_b, %d6 : i64

      // ---- Main loop over K tiles. ----
      %k_pad = arith.addi %k, %c63_i32 : i32
      %num_k_tiles = arith.divui %k_pad, %c64_i32 : i32
      %zero = llvm.mlir.zero : !acc
      %res:2 = scf.for %kt = %c0_i32 to %num_k_tiles step %c1_i32
          iter_args(%acc0 = %zero, %acc1 = %zero) -> (!acc, !acc) : i32 {
        %k0 = arith.muli %kt, %c64_i32 : i32
        // The barrier completes one phase per K tile; wait for the parity of this one.
        %phase = arith.andi %kt, %c1_i32 : i32
        scf.if %is_leader {
          nvvm.mbarrier.arrive.expect_tx %bar, %tile_bytes : !llvm.ptr<3>, i32
          // Coordinates are innermost first: (k, row).
          nvvm.cp.async.bulk.tensor.shared.cluster.global %s_a_cl, %tma_a, %bar, box[%k0, %m0] : !llvm.ptr<7>, !llvm.ptr
          nvvm.cp.async.bulk.tensor.shared.cluster.global %s_b_cl, %tma_b, %bar, box[%k0, %n0] : !llvm.ptr<7>, !llvm.ptr
        }
        nvvm.mbarrier.try_wait.parity %bar, %phase, %ticks : !llvm.ptr<3>, i32, i32

        // A is M x K with K contiguous ("row"), B is N x K with K contiguous, i.e. K x N
        // column-major ("col"): both K-major, no transpose bits in the instruction.
        nvvm.wgmma.fence.aligned
        %a0_0 = nvvm.wgmma.mma_async %da_0, %db_0, %acc0, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        %a1_0 = nvvm.wgmma.mma_async %da_h1_0, %db_0, %acc1, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        %a0_1 = nvvm.wgmma.mma_async %da_1, %db_1, %a0_0, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        %a1_1 = nvvm.wgmma.mma_async %da_h1_1, %db_1, %a1_0, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        %a0_2 = nvvm.wgmma.mma_async %da_2, %db_2, %a0_1, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        %a1_2 = nvvm.wgmma.mma_async %da_h1_2, %db_2, %a1_1, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        %a0_3 = nvvm.wgmma.mma_async %da_3, %db_3, %a0_2, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        %a1_3 = nvvm.wgmma.mma_async %da_h1_3, %db_3, %a1_2, #nvvm.shape<m = 64, n = 128, k = 16>,
            D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>],
            B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc -> !acc
        nvvm.wgmma.commit.group.sync.aligned
        nvvm.wgmma.wait.group.sync.aligned 0
        // Every thread is past its wgmma reads of the tiles before the leader overwrites them.
        gpu.barrier
        scf.yield %a0_3, %a1_3 : !acc, !acc
      }

      // ---- Epilogue: FP32 fragments -> bf16 -> global, bounds-checked on M and N. ----
      // wgmma m64nNk16 D fragment (PTX ISA "Matrix Fragments for wgmma.mma_async.m64nNk16"):
      // warp w of the warpgroup owns rows 16w..16w+15; lane l has g = l / 4, q = l % 4; register i
      // holds row 16w + g + 8 * ((i / 2) % 2), column 8 * (i / 4) + 2q + (i % 2).
      // So registers 4j..4j+3 are (g, 8j+2q), (g, 8j+2q+1), (g+8, 8j+2q), (g+8, 8j+2q+1).
      %warp = arith.shrui %tid, %c5_i32 : i32
      %lane = arith.andi %tid, %c31_i32 : i32
      %g = arith.shrui %lane, %c2_i32 : i32
      %q = arith.andi %lane, %c3_i32 : i32
      %warp_rows = arith.muli %warp, %c16_i32 : i32
      %row_w = arith.addi %m0, %warp_rows : i32
      %row0 = arith.addi %row_w, %g : i32
      %row1 = arith.addi %row0, %c64_i32 : i32
      %q2 = arith.muli %q, %c2_i32 : i32
      %col_base = arith.addi %n0, %q2 : i32
      %c24_i32 = arith.constant 24 : i32
      %c32_i32 = arith.constant 32 : i32
      %c40_i32 = arith.constant 40 : i32
      %c48_i32 = arith.constant 48 : i32
      %c56_i32 = arith.constant 56 : i32
      %c72_i32 = arith.constant 72 : i32
      %c80_i32 = arith.constant 80 : i32
      %c88_i32 = arith.constant 88 : i32
      %c96_i32 = arith.constant 96 : i32
      %c104_i32 = arith.constant 104 : i32
      %c112_i32 = arith.constant 112 : i32
      %c120_i32 = arith.constant 120 : i32
      %col0 = arith.addi %col_base, %c0_i32 : i32
      %col1 = arith.addi %col_base, %c8_i32 : i32
      %col2 = arith.addi %col_base, %c16_i32 : i32
      %col3 = arith.addi %col_base, %c24_i32 : i32
      %col4 = arith.addi %col_base, %c32_i32 : i32
      %col5 = arith.addi %col_base, %c40_i32 : i32
      %col6 = arith.addi %col_base, %c48_i32 : i32
      %col7 = arith.addi %col_base, %c56_i32 : i32
      %col8 = arith.addi %col_base, %c64_i32 : i32
      %col9 = arith.addi %col_base, %c72_i32 : i32
      %col10 = arith.addi %col_base, %c80_i32 : i32
      %col11 = arith.addi %col_base, %c88_i32 : i32
      %col12 = arith.addi %col_base, %c96_i32 : i32
      %col13 = arith.addi %col_base, %c104_i32 : i32
      %col14 = arith.addi %col_base, %c112_i32 : i32
      %col15 = arith.addi %col_base, %c120_i32 : i32
      // Rows m0 + 0 + 16*warp + g (+8): accumulator half 0.
      %e0_0 = llvm.extractvalue %res#0[0] : !acc
      %e0_1 = llvm.extractvalue %res#0[1] : !acc
      %e0_2 = llvm.extractvalue %res#0[2] : !acc
      %e0_3 = llvm.extractvalue %res#0[3] : !acc
      func.call @store_c_quad(%c, %row0, %col0, %e0_0, %e0_1, %e0_2, %e0_3, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_4 = llvm.extractvalue %res#0[4] : !acc
      %e0_5 = llvm.extractvalue %res#0[5] : !acc
      %e0_6 = llvm.extractvalue %res#0[6] : !acc
      %e0_7 = llvm.extractvalue %res#0[7] : !acc
      func.call @store_c_quad(%c, %row0, %col1, %e0_4, %e0_5, %e0_6, %e0_7, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_8 = llvm.extractvalue %res#0[8] : !acc
      %e0_9 = llvm.extractvalue %res#0[9] : !acc
      %e0_10 = llvm.extractvalue %res#0[10] : !acc
      %e0_11 = llvm.extractvalue %res#0[11] : !acc
      func.call @store_c_quad(%c, %row0, %col2, %e0_8, %e0_9, %e0_10, %e0_11, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_12 = llvm.extractvalue %res#0[12] : !acc
      %e0_13 = llvm.extractvalue %res#0[13] : !acc
      %e0_14 = llvm.extractvalue %res#0[14] : !acc
      %e0_15 = llvm.extractvalue %res#0[15] : !acc
      func.call @store_c_quad(%c, %row0, %col3, %e0_12, %e0_13, %e0_14, %e0_15, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_16 = llvm.extractvalue %res#0[16] : !acc
      %e0_17 = llvm.extractvalue %res#0[17] : !acc
      %e0_18 = llvm.extractvalue %res#0[18] : !acc
      %e0_19 = llvm.extractvalue %res#0[19] : !acc
      func.call @store_c_quad(%c, %row0, %col4, %e0_16, %e0_17, %e0_18, %e0_19, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_20 = llvm.extractvalue %res#0[20] : !acc
      %e0_21 = llvm.extractvalue %res#0[21] : !acc
      %e0_22 = llvm.extractvalue %res#0[22] : !acc
      %e0_23 = llvm.extractvalue %res#0[23] : !acc
      func.call @store_c_quad(%c, %row0, %col5, %e0_20, %e0_21, %e0_22, %e0_23, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_24 = llvm.extractvalue %res#0[24] : !acc
      %e0_25 = llvm.extractvalue %res#0[25] : !acc
      %e0_26 = llvm.extractvalue %res#0[26] : !acc
      %e0_27 = llvm.extractvalue %res#0[27] : !acc
      func.call @store_c_quad(%c, %row0, %col6, %e0_24, %e0_25, %e0_26, %e0_27, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_28 = llvm.extractvalue %res#0[28] : !acc
      %e0_29 = llvm.extractvalue %res#0[29] : !acc
      %e0_30 = llvm.extractvalue %res#0[30] : !acc
      %e0_31 = llvm.extractvalue %res#0[31] : !acc
      func.call @store_c_quad(%c, %row0, %col7, %e0_28, %e0_29, %e0_30, %e0_31, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_32 = llvm.extractvalue %res#0[32] : !acc
      %e0_33 = llvm.extractvalue %res#0[33] : !acc
      %e0_34 = llvm.extractvalue %res#0[34] : !acc
      %e0_35 = llvm.extractvalue %res#0[35] : !acc
      func.call @store_c_quad(%c, %row0, %col8, %e0_32, %e0_33, %e0_34, %e0_35, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_36 = llvm.extractvalue %res#0[36] : !acc
      %e0_37 = llvm.extractvalue %res#0[37] : !acc
      %e0_38 = llvm.extractvalue %res#0[38] : !acc
      %e0_39 = llvm.extractvalue %res#0[39] : !acc
      func.call @store_c_quad(%c, %row0, %col9, %e0_36, %e0_37, %e0_38, %e0_39, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_40 = llvm.extractvalue %res#0[40] : !acc
      %e0_41 = llvm.extractvalue %res#0[41] : !acc
      %e0_42 = llvm.extractvalue %res#0[42] : !acc
      %e0_43 = llvm.extractvalue %res#0[43] : !acc
      func.call @store_c_quad(%c, %row0, %col10, %e0_40, %e0_41, %e0_42, %e0_43, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_44 = llvm.extractvalue %res#0[44] : !acc
      %e0_45 = llvm.extractvalue %res#0[45] : !acc
      %e0_46 = llvm.extractvalue %res#0[46] : !acc
      %e0_47 = llvm.extractvalue %res#0[47] : !acc
      func.call @store_c_quad(%c, %row0, %col11, %e0_44, %e0_45, %e0_46, %e0_47, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_48 = llvm.extractvalue %res#0[48] : !acc
      %e0_49 = llvm.extractvalue %res#0[49] : !acc
      %e0_50 = llvm.extractvalue %res#0[50] : !acc
      %e0_51 = llvm.extractvalue %res#0[51] : !acc
      func.call @store_c_quad(%c, %row0, %col12, %e0_48, %e0_49, %e0_50, %e0_51, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_52 = llvm.extractvalue %res#0[52] : !acc
      %e0_53 = llvm.extractvalue %res#0[53] : !acc
      %e0_54 = llvm.extractvalue %res#0[54] : !acc
      %e0_55 = llvm.extractvalue %res#0[55] : !acc
      func.call @store_c_quad(%c, %row0, %col13, %e0_52, %e0_53, %e0_54, %e0_55, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_56 = llvm.extractvalue %res#0[56] : !acc
      %e0_57 = llvm.extractvalue %res#0[57] : !acc
      %e0_58 = llvm.extractvalue %res#0[58] : !acc
      %e0_59 = llvm.extractvalue %res#0[59] : !acc
      func.call @store_c_quad(%c, %row0, %col14, %e0_56, %e0_57, %e0_58, %e0_59, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e0_60 = llvm.extractvalue %res#0[60] : !acc
      %e0_61 = llvm.extractvalue %res#0[61] : !acc
      %e0_62 = llvm.extractvalue %res#0[62] : !acc
      %e0_63 = llvm.extractvalue %res#0[63] : !acc
      func.call @store_c_quad(%c, %row0, %col15, %e0_60, %e0_61, %e0_62, %e0_63, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      // Rows m0 + 64 + 16*warp + g (+8): accumulator half 1.
      %e1_0 = llvm.extractvalue %res#1[0] : !acc
      %e1_1 = llvm.extractvalue %res#1[1] : !acc
      %e1_2 = llvm.extractvalue %res#1[2] : !acc
      %e1_3 = llvm.extractvalue %res#1[3] : !acc
      func.call @store_c_quad(%c, %row1, %col0, %e1_0, %e1_1, %e1_2, %e1_3, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_4 = llvm.extractvalue %res#1[4] : !acc
      %e1_5 = llvm.extractvalue %res#1[5] : !acc
      %e1_6 = llvm.extractvalue %res#1[6] : !acc
      %e1_7 = llvm.extractvalue %res#1[7] : !acc
      func.call @store_c_quad(%c, %row1, %col1, %e1_4, %e1_5, %e1_6, %e1_7, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_8 = llvm.extractvalue %res#1[8] : !acc
      %e1_9 = llvm.extractvalue %res#1[9] : !acc
      %e1_10 = llvm.extractvalue %res#1[10] : !acc
      %e1_11 = llvm.extractvalue %res#1[11] : !acc
      func.call @store_c_quad(%c, %row1, %col2, %e1_8, %e1_9, %e1_10, %e1_11, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_12 = llvm.extractvalue %res#1[12] : !acc
      %e1_13 = llvm.extractvalue %res#1[13] : !acc
      %e1_14 = llvm.extractvalue %res#1[14] : !acc
      %e1_15 = llvm.extractvalue %res#1[15] : !acc
      func.call @store_c_quad(%c, %row1, %col3, %e1_12, %e1_13, %e1_14, %e1_15, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_16 = llvm.extractvalue %res#1[16] : !acc
      %e1_17 = llvm.extractvalue %res#1[17] : !acc
      %e1_18 = llvm.extractvalue %res#1[18] : !acc
      %e1_19 = llvm.extractvalue %res#1[19] : !acc
      func.call @store_c_quad(%c, %row1, %col4, %e1_16, %e1_17, %e1_18, %e1_19, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_20 = llvm.extractvalue %res#1[20] : !acc
      %e1_21 = llvm.extractvalue %res#1[21] : !acc
      %e1_22 = llvm.extractvalue %res#1[22] : !acc
      %e1_23 = llvm.extractvalue %res#1[23] : !acc
      func.call @store_c_quad(%c, %row1, %col5, %e1_20, %e1_21, %e1_22, %e1_23, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_24 = llvm.extractvalue %res#1[24] : !acc
      %e1_25 = llvm.extractvalue %res#1[25] : !acc
      %e1_26 = llvm.extractvalue %res#1[26] : !acc
      %e1_27 = llvm.extractvalue %res#1[27] : !acc
      func.call @store_c_quad(%c, %row1, %col6, %e1_24, %e1_25, %e1_26, %e1_27, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_28 = llvm.extractvalue %res#1[28] : !acc
      %e1_29 = llvm.extractvalue %res#1[29] : !acc
      %e1_30 = llvm.extractvalue %res#1[30] : !acc
      %e1_31 = llvm.extractvalue %res#1[31] : !acc
      func.call @store_c_quad(%c, %row1, %col7, %e1_28, %e1_29, %e1_30, %e1_31, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_32 = llvm.extractvalue %res#1[32] : !acc
      %e1_33 = llvm.extractvalue %res#1[33] : !acc
      %e1_34 = llvm.extractvalue %res#1[34] : !acc
      %e1_35 = llvm.extractvalue %res#1[35] : !acc
      func.call @store_c_quad(%c, %row1, %col8, %e1_32, %e1_33, %e1_34, %e1_35, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_36 = llvm.extractvalue %res#1[36] : !acc
      %e1_37 = llvm.extractvalue %res#1[37] : !acc
      %e1_38 = llvm.extractvalue %res#1[38] : !acc
      %e1_39 = llvm.extractvalue %res#1[39] : !acc
      func.call @store_c_quad(%c, %row1, %col9, %e1_36, %e1_37, %e1_38, %e1_39, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_40 = llvm.extractvalue %res#1[40] : !acc
      %e1_41 = llvm.extractvalue %res#1[41] : !acc
      %e1_42 = llvm.extractvalue %res#1[42] : !acc
      %e1_43 = llvm.extractvalue %res#1[43] : !acc
      func.call @store_c_quad(%c, %row1, %col10, %e1_40, %e1_41, %e1_42, %e1_43, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_44 = llvm.extractvalue %res#1[44] : !acc
      %e1_45 = llvm.extractvalue %res#1[45] : !acc
      %e1_46 = llvm.extractvalue %res#1[46] : !acc
      %e1_47 = llvm.extractvalue %res#1[47] : !acc
      func.call @store_c_quad(%c, %row1, %col11, %e1_44, %e1_45, %e1_46, %e1_47, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_48 = llvm.extractvalue %res#1[48] : !acc
      %e1_49 = llvm.extractvalue %res#1[49] : !acc
      %e1_50 = llvm.extractvalue %res#1[50] : !acc
      %e1_51 = llvm.extractvalue %res#1[51] : !acc
      func.call @store_c_quad(%c, %row1, %col12, %e1_48, %e1_49, %e1_50, %e1_51, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_52 = llvm.extractvalue %res#1[52] : !acc
      %e1_53 = llvm.extractvalue %res#1[53] : !acc
      %e1_54 = llvm.extractvalue %res#1[54] : !acc
      %e1_55 = llvm.extractvalue %res#1[55] : !acc
      func.call @store_c_quad(%c, %row1, %col13, %e1_52, %e1_53, %e1_54, %e1_55, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_56 = llvm.extractvalue %res#1[56] : !acc
      %e1_57 = llvm.extractvalue %res#1[57] : !acc
      %e1_58 = llvm.extractvalue %res#1[58] : !acc
      %e1_59 = llvm.extractvalue %res#1[59] : !acc
      func.call @store_c_quad(%c, %row1, %col14, %e1_56, %e1_57, %e1_58, %e1_59, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      %e1_60 = llvm.extractvalue %res#1[60] : !acc
      %e1_61 = llvm.extractvalue %res#1[61] : !acc
      %e1_62 = llvm.extractvalue %res#1[62] : !acc
      %e1_63 = llvm.extractvalue %res#1[63] : !acc
      func.call @store_c_quad(%c, %row1, %col15, %e1_60, %e1_61, %e1_62, %e1_63, %m, %n) : (!llvm.ptr, i32, i32, f32, f32, f32, f32, i32, i32) -> ()
      gpu.return
    }

    // Stores the four values one thread holds for one 8-column block of a fragment:
    // (row, col), (row, col + 1), (row + 8, col), (row + 8, col + 1), each only if inside C.
    // O3 inlines it; it exists to keep the template readable.
    func.func @store_c_quad(%c: !llvm.ptr, %row: i32, %col: i32, %v00: f32, %v01: f32,
                            %v10: f32, %v11: f32, %m: i32, %n: i32)
        attributes {llvm.linkage = #llvm.linkage<internal>} {
      %c1_i32 = arith.constant 1 : i32
      %c8_i32 = arith.constant 8 : i32
      %col1 = arith.addi %col, %c1_i32 : i32
      %row8 = arith.addi %row, %c8_i32 : i32
      func.call @store_c(%c, %row, %col, %v00, %m, %n) : (!llvm.ptr, i32, i32, f32, i32, i32) -> ()
      func.call @store_c(%c, %row, %col1, %v01, %m, %n) : (!llvm.ptr, i32, i32, f32, i32, i32) -> ()
      func.call @store_c(%c, %row8, %col, %v10, %m, %n) : (!llvm.ptr, i32, i32, f32, i32, i32) -> ()
      func.call @store_c(%c, %row8, %col1, %v11, %m, %n) : (!llvm.ptr, i32, i32, f32, i32, i32) -> ()
      return
    }

    // C[row, col] = bf16(v) if row < m and col < n (row-major, leading dimension n).
    func.func @store_c(%c: !llvm.ptr, %row: i32, %col: i32, %v: f32, %m: i32, %n: i32)
        attributes {llvm.linkage = #llvm.linkage<internal>} {
      %row_ok = arith.cmpi ult, %row, %m : i32
      %col_ok = arith.cmpi ult, %col, %n : i32
      %ok = arith.andi %row_ok, %col_ok : i1
      scf.if %ok {
        %row64 = arith.extui %row : i32 to i64
        %col64 = arith.extui %col : i32 to i64
        %n64 = arith.extui %n : i32 to i64
        %row_off = arith.muli %row64, %n64 : i64
        %idx = arith.addi %row_off, %col64 : i64
        %p = llvm.getelementptr %c[%idx] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
        %b = arith.truncf %v : f32 to bf16
        llvm.store %b, %p : bf16, !llvm.ptr
      }
      return
    }
  }
}
