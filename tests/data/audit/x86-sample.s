# A hand-written x86-64 object for the machine-code audit (GNU as syntax; written for reprocl, no licence
# restrictions): what Intel's OpenCL CPU runtime puts in its program binary's .ocl.obj section, in small.
# tests/data/audit/x86-sample.objdump is its disassembly (cc -c x86-sample.s -o x86-sample.o &&
# objdump -d -r -t -w --no-show-raw-insn x86-sample.o), for machines without binutils.
#   k_native:  3 FMAs, MXCSR |= 0x8040 (FTZ and DAZ), and a call of helper: an approximate reciprocal,
#              an approximate reciprocal square root and MXCSR = 0x9fc0 (FTZ and DAZ); 7 findings
#   k_clean:   correctly rounded arithmetic, integer multiply-adds, MXCSR = 0x1f80 (no flush) and the
#              saved MXCSR restored, a call of an outside function through a relocation: no finding
#   k_unknown: MXCSR loaded from memory it cannot follow: 1 finding
#   k_vec:     clean itself; its vectorized form _ZGVeN16v_k_vec has one vfmadd231ps
        .text
        .globl  k_native
        .type   k_native, @function
k_native:
        vfmadd231ss     %xmm2, %xmm1, %xmm0
        vfmadd213pd     %zmm2, %zmm1, %zmm0
        vfnmsub132sd    %xmm2, %xmm1, %xmm0
        stmxcsr -4(%rsp)
        orl     $0x8040, -4(%rsp)
        ldmxcsr -4(%rsp)
        call    helper
        ret
        .size   k_native, .-k_native

        .type   helper, @function
helper:
        vrcp14ps        %zmm1, %zmm0
        rsqrtss %xmm1, %xmm0
        movl    $0x9fc0, -8(%rsp)
        vldmxcsr        -8(%rsp)
        ret
        .size   helper, .-helper

        .globl  k_clean
        .type   k_clean, @function
k_clean:
        stmxcsr -4(%rsp)
        movl    $0x1f80, -8(%rsp)
        ldmxcsr -8(%rsp)
        vmulss  %xmm1, %xmm0, %xmm0
        vaddss  %xmm2, %xmm0, %xmm0
        vdivss  %xmm2, %xmm0, %xmm0
        vsqrtss %xmm0, %xmm0, %xmm0
        vpmaddwd        %ymm1, %ymm0, %ymm0
        vpmadd52luq     %zmm1, %zmm0, %zmm0
        movabs  $outside_fn, %rax
        call    *%rax
        ldmxcsr -4(%rsp)
        ret
        .size   k_clean, .-k_clean

        .globl  k_unknown
        .type   k_unknown, @function
k_unknown:
        ldmxcsr (%rdi)
        ret
        .size   k_unknown, .-k_unknown

        .globl  k_vec
        .type   k_vec, @function
k_vec:
        vaddps  %zmm1, %zmm0, %zmm0
        ret
        .size   k_vec, .-k_vec

        .globl  _ZGVeN16v_k_vec
        .type   _ZGVeN16v_k_vec, @function
_ZGVeN16v_k_vec:
        vfmadd231ps     %zmm2, %zmm1, %zmm0
        ret
        .size   _ZGVeN16v_k_vec, .-_ZGVeN16v_k_vec
        .section .note.GNU-stack,"",@progbits
