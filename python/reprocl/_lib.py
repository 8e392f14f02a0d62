"""ctypes declarations of the reprocl C API and the search for the shared library.

The library is found, in this order: ``$REPROCL_LIBRARY`` (a path); the installed one (the ``libdir`` of
``pkg-config reprocl``, then ``ctypes.util.find_library("reprocl")``); the copy ``pip install ./python``
bundled into the package (``reprocl/_lib/libreprocl.so.0``). The kernels are embedded in the library, so
nothing else is needed at run time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_longlong,
    c_size_t,
    c_uint,
    c_uint32,
    c_uint64,
    c_ubyte,
    c_void_p,
)
from pathlib import Path
from typing import Optional

_HERE = Path(__file__).resolve().parent


def _pkg_config_candidate() -> Optional[str]:
    exe = shutil.which("pkg-config")
    if not exe:
        return None
    try:
        libdir = subprocess.run(
            [exe, "--variable=libdir", "reprocl"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    for name in ("libreprocl.so.0", "libreprocl.so"):
        if libdir and (Path(libdir) / name).exists():
            return str(Path(libdir) / name)
    return None


def library_candidates() -> list[tuple[str, str]]:
    """(where, path) of every place searched, in order: what `reprocl.library_path()` chose from."""
    out: list[tuple[str, str]] = []
    env = os.environ.get("REPROCL_LIBRARY")
    if env:
        out.append(("$REPROCL_LIBRARY", env))
    pc = _pkg_config_candidate()
    if pc:
        out.append(("pkg-config", pc))
    found = ctypes.util.find_library("reprocl")
    if found:
        out.append(("find_library", found))
    bundled = _HERE / "_lib" / "libreprocl.so.0"
    if bundled.exists():
        out.append(("bundled", str(bundled)))
    return out


def _load() -> tuple[ctypes.CDLL, str]:
    cands = library_candidates()
    if not cands:
        raise ImportError(
            "reprocl: the C library libreprocl was not found: set REPROCL_LIBRARY to its path, install it "
            "(cmake --install; pkg-config reprocl), or install this package with `pip install ./python`, "
            "which builds and bundles it"
        )
    where, path = cands[0]
    try:
        return ctypes.CDLL(path), path
    except OSError as e:
        raise ImportError(f"reprocl: cannot load {path} (from {where}): {e}") from e


lib, LIBRARY_PATH = _load()

# ---- structures (the layouts of include/reprocl/*.h; tests/test_layout.py checks them with a C compiler) ----


class DeviceInfo(Structure):
    _fields_ = [
        ("index", c_size_t),
        ("platform", c_void_p),
        ("device", c_void_p),
        ("platform_name", c_char * 128),
        ("device_name", c_char * 128),
    ]


class DeviceProfile(Structure):
    _fields_ = [
        ("version", c_uint),
        ("platform_name", c_char * 128),
        ("platform_vendor", c_char * 128),
        ("platform_version", c_char * 128),
        ("device_name", c_char * 128),
        ("device_vendor", c_char * 128),
        ("device_version", c_char * 128),
        ("driver_version", c_char * 128),
        ("opencl_c_version", c_char * 128),
        ("type", c_uint64),
        ("vendor_id", c_uint32),
        ("compute_units", c_uint32),
        ("address_bits", c_uint32),
        ("max_work_group_size", c_size_t),
        ("max_work_item_sizes", c_size_t * 3),
        ("local_mem_size", c_uint64),
        ("global_mem_size", c_uint64),
        ("max_mem_alloc_size", c_uint64),
        ("fp32_denormals", c_int),
        ("fp32_inf_nan", c_int),
        ("fp32_round_to_nearest", c_int),
        ("fp32_fma", c_int),
        ("fp32_correctly_rounded_div_sqrt", c_int),
        ("fp64", c_int),
        ("fp64_denormals", c_int),
        ("fp64_fma", c_int),
        ("int64_atomics", c_int),
        ("little_endian", c_int),
        ("loop_iteration_limit", c_uint64),
        ("fp32_emulate_subnormals", c_int),
        ("fp32_emulate_div_sqrt", c_int),
        ("fingerprint", c_char * 65),
    ]


class ContextOptions(Structure):
    _fields_ = [
        ("version", c_uint),
        ("device", c_char_p),
        ("mode", c_int),
        ("profiling", c_int),
        ("tuning", c_int),
        ("cache_dir", c_char_p),
    ]


class QueueArgs(Structure):
    _fields_ = [
        ("version", c_uint),
        ("queue", c_void_p),
        ("num_events_in_wait_list", c_uint32),
        ("event_wait_list", POINTER(c_void_p)),
        ("event", POINTER(c_void_p)),
    ]


class ReduceOptions(Structure):
    _fields_ = [
        ("version", c_uint),
        ("mode", c_int),
        ("local_size", c_size_t),
        ("num_groups", c_size_t),
        ("variant", c_int),
    ]


class StencilDesc(Structure):
    _fields_ = [
        ("version", c_uint),
        ("kind", c_int),
        ("radius", c_uint),
        ("weights", c_double * 25),
        ("boundary", c_int),
        ("boundary_value", c_double),
    ]


class SorDesc(Structure):
    _fields_ = [("version", c_uint), ("omega", c_double), ("boundary", c_int), ("boundary_value", c_double)]


class StencilOptions(Structure):
    _fields_ = [
        ("version", c_uint),
        ("variant", c_int),
        ("local_size", c_size_t * 2),
        ("tile", c_size_t * 2),
        ("points_per_item", c_size_t * 2),
    ]


class Csr(Structure):
    _fields_ = [
        ("dtype", c_int),
        ("nrows", c_size_t),
        ("ncols", c_size_t),
        ("nnz", c_size_t),
        ("row_ptr", POINTER(c_uint64)),
        ("col_idx", POINTER(c_uint32)),
        ("values", c_void_p),
    ]


class SpmvOptions(Structure):
    _fields_ = [
        ("version", c_uint),
        ("contract", c_int),
        ("variant", c_int),
        ("local_size", c_size_t),
        ("lanes", c_size_t),
        ("block_nnz", c_size_t),
        ("slice", c_size_t),
        ("long_row", c_size_t),
        ("window", c_size_t),
    ]


class CgOptions(Structure):
    _fields_ = [
        ("version", c_uint),
        ("tol", c_double),
        ("max_iterations", c_size_t),
        ("jacobi", c_int),
        ("dot_mode", c_int),
        ("spmv", SpmvOptions),
    ]


class CgResult(Structure):
    _fields_ = [
        ("iterations", c_size_t),
        ("converged", c_int),
        ("residual_norm", c_double),
        ("rhs_norm", c_double),
        ("history", c_void_p),
        ("history_len", c_size_t),
        ("history_sha256", c_char * 65),
        ("message", c_char * 256),
    ]


class Grid(Structure):
    _fields_ = [("dtype", c_int), ("width", c_size_t), ("height", c_size_t), ("data", c_void_p)]


MD_MAX_TYPES = 8


class MdSystem(Structure):
    _fields_ = [
        ("natoms", c_size_t),
        ("ntypes", c_int),
        ("lo", c_double * 3),
        ("hi", c_double * 3),
        ("periodic", c_int * 3),
        ("pos", POINTER(c_double)),
        ("vel", POINTER(c_double)),
        ("type", POINTER(c_int)),
        ("id", POINTER(c_longlong)),
        ("mass", c_double * MD_MAX_TYPES),
    ]


class MdLj(Structure):
    _fields_ = [
        ("version", c_uint),
        ("cutoff", c_double),
        ("shift", c_int),
        ("mixing", c_int),
        ("epsilon", c_double * MD_MAX_TYPES),
        ("sigma", c_double * MD_MAX_TYPES),
        ("pair_epsilon", (c_double * MD_MAX_TYPES) * MD_MAX_TYPES),
        ("pair_sigma", (c_double * MD_MAX_TYPES) * MD_MAX_TYPES),
        ("pair_set", (c_ubyte * MD_MAX_TYPES) * MD_MAX_TYPES),
    ]


class MdOptions(Structure):
    _fields_ = [
        ("version", c_uint),
        ("path", c_int),
        ("convert", c_int),
        ("local_size", c_size_t),
        ("build_local_size", c_size_t),
        ("skin", c_double),
        ("neighbor_capacity", c_size_t),
        ("kernel_times", c_int),
    ]


class MdThermo(Structure):
    _fields_ = [
        ("step", c_size_t),
        ("natoms", c_size_t),
        ("pe", c_double),
        ("ke", c_double),
        ("etotal", c_double),
        ("temperature", c_double),
        ("pressure", c_double),
        ("virial", c_double),
        ("neighbor_builds", c_size_t),
    ]


MD_THERMO_FN = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(MdThermo), c_void_p)


class ProgramOptions(Structure):
    _fields_ = [("version", c_uint), ("options", c_char_p), ("name", c_char_p), ("flags", c_uint)]


class TuneParam(Structure):
    _fields_ = [("name", c_char * 32), ("value", c_size_t), ("label", c_char * 24)]


class TuneChoice(Structure):
    _fields_ = [
        ("kernel", c_char * 48),
        ("dtype", c_int),
        ("size_log2", c_uint),
        ("count", c_size_t),
        ("params", TuneParam * 8),
        ("origin", c_int),
        ("time_s", c_double),
        ("default_time_s", c_double),
        ("spread", c_double),
        ("samples", c_uint),
    ]


class TuneReport(Structure):
    _fields_ = [
        ("choice", TuneChoice),
        ("candidates", c_size_t),
        ("invalid", c_size_t),
        ("duplicates", c_size_t),
        ("timed", c_size_t),
        ("pruned", c_size_t),
        ("mismatches", c_size_t),
        ("mismatch", c_char * 512),
        ("launches", c_size_t),
        ("tuning_s", c_double),
        ("budget_exhausted", c_int),
        ("improved", c_int),
        ("host_timing", c_int),
        ("reference_digest", c_char * 65),
    ]


class TuneOptions(Structure):
    _fields_ = [
        ("version", c_uint),
        ("budget_ms", c_double),
        ("samples", c_int),
        ("store", c_int),
        ("progress", c_void_p),
        ("progress_user", c_void_p),
    ]


# ---- prototypes ------------------------------------------------------------------------------------------

_P = c_void_p
_PROTOS: dict[str, tuple[object, list[object]]] = {
    "rcl_error_last": (c_char_p, []),
    "rcl_error_last_status": (c_int, []),
    "rcl_error_clear": (None, []),
    "rcl_status_name": (c_char_p, [c_int]),
    "rcl_devices": (c_int, [POINTER(POINTER(DeviceInfo)), POINTER(c_size_t)]),
    "rcl_devices_free": (None, [POINTER(DeviceInfo)]),
    "rcl_device_find": (c_int, [POINTER(DeviceInfo), c_char_p]),
    "rcl_device_profile_query": (c_int, [POINTER(DeviceProfile), _P]),
    "rcl_device_profile_support": (c_int, [POINTER(DeviceProfile), c_int, c_int, POINTER(c_char_p)]),
    "rcl_support_name": (c_char_p, [c_int]),
    "rcl_family_name": (c_char_p, [c_int]),
    "rcl_context_create": (c_int, [POINTER(_P), POINTER(ContextOptions)]),
    "rcl_context_wrap": (c_int, [POINTER(_P), _P, _P, _P, POINTER(ContextOptions)]),
    "rcl_context_free": (None, [_P]),
    "rcl_context_profile": (POINTER(DeviceProfile), [_P]),
    "rcl_context_mode": (c_int, [_P]),
    "rcl_context_cl_context": (_P, [_P]),
    "rcl_context_cl_device": (_P, [_P]),
    "rcl_context_cl_queue": (_P, [_P]),
    "rcl_context_verdict": (c_int, [POINTER(c_int), POINTER(c_char_p), _P, c_int, c_int]),
    "rcl_verdict_name": (c_char_p, [c_int]),
    "rcl_sha256_hex": (None, [c_char * 65, _P, c_size_t]),
    "rcl_generate": (c_int, [_P, c_int, c_size_t, c_int, c_uint64]),
    "rcl_gen_kind_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_reduce": (c_int, [_P, _P, c_int, c_int, c_size_t, _P, _P, POINTER(ReduceOptions)]),
    "rcl_reduce_enqueue": (
        c_int,
        [_P, c_size_t, _P, c_int, c_int, c_size_t, _P, c_size_t, _P, c_size_t, POINTER(ReduceOptions),
         POINTER(QueueArgs)],
    ),
    "rcl_ref_reduce": (c_int, [_P, c_int, c_int, c_int, c_size_t, _P, _P]),
    "rcl_axpy": (c_int, [_P, _P, c_int, c_size_t, _P, _P, c_size_t]),
    "rcl_scal": (c_int, [_P, _P, c_int, c_size_t, _P, c_size_t]),
    "rcl_axpy_enqueue": (c_int, [_P, c_size_t, _P, c_int, c_size_t, _P, _P, c_size_t, c_size_t, POINTER(QueueArgs)]),
    "rcl_scal_enqueue": (c_int, [_P, c_size_t, _P, c_int, c_size_t, _P, c_size_t, POINTER(QueueArgs)]),
    "rcl_ref_axpy": (None, [_P, c_int, c_size_t, _P, _P]),
    "rcl_ref_scal": (None, [_P, c_int, c_size_t, _P]),
    "rcl_boundary_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_stencil_variant_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_stencil": (
        c_int, [_P, _P, POINTER(StencilDesc), c_int, c_size_t, c_size_t, c_size_t, _P, POINTER(StencilOptions)]
    ),
    "rcl_ref_stencil": (c_int, [_P, POINTER(StencilDesc), c_int, c_size_t, c_size_t, c_size_t, _P]),
    "rcl_sor": (
        c_int, [_P, _P, _P, POINTER(SorDesc), c_int, c_size_t, c_size_t, c_size_t, _P, POINTER(StencilOptions)]
    ),
    "rcl_ref_sor": (c_int, [_P, _P, POINTER(SorDesc), c_int, c_size_t, c_size_t, c_size_t, _P]),
    "rcl_stencil_enqueue": (
        c_int,
        [_P, c_size_t, c_size_t, _P, POINTER(StencilDesc), c_int, c_size_t, c_size_t, c_size_t, _P, c_size_t,
         c_size_t, _P, POINTER(StencilOptions), POINTER(QueueArgs)],
    ),
    "rcl_grid_alloc": (c_int, [POINTER(Grid), c_int, c_size_t, c_size_t]),
    "rcl_grid_free": (None, [POINTER(Grid)]),
    "rcl_grid_init_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_grid_generate": (c_int, [POINTER(Grid), c_int, c_uint64]),
    "rcl_csr_create": (
        c_int, [POINTER(POINTER(Csr)), c_int, c_size_t, c_size_t, c_size_t, _P, _P, _P]
    ),
    "rcl_csr_free": (None, [POINTER(Csr)]),
    "rcl_csr_digest": (None, [c_char * 65, POINTER(Csr)]),
    "rcl_matrix_read": (c_int, [POINTER(POINTER(Csr)), c_char_p, c_int]),
    "rcl_csr_generate": (c_int, [POINTER(POINTER(Csr)), c_int, c_char_p]),
    "rcl_spmv_contract_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_spmv_variant_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_spmv": (c_int, [_P, _P, POINTER(Csr), _P, _P, _P, POINTER(SpmvOptions)]),
    "rcl_ref_spmv": (c_int, [_P, POINTER(Csr), c_int, _P, _P, _P]),
    "rcl_spmv_matrix_create": (c_int, [POINTER(_P), _P, POINTER(Csr)]),
    "rcl_spmv_matrix_free": (None, [_P]),
    "rcl_spmv_enqueue": (c_int, [_P, c_size_t, _P, _P, _P, c_size_t, _P, POINTER(SpmvOptions), POINTER(QueueArgs)]),
    "rcl_cg": (c_int, [_P, POINTER(CgResult), _P, _P, POINTER(CgOptions)]),
    "rcl_ref_cg": (c_int, [_P, POINTER(CgResult), POINTER(Csr), _P, POINTER(CgOptions)]),
    "rcl_cg_result_free": (None, [POINTER(CgResult)]),
    "rcl_md_system_alloc": (c_int, [POINTER(POINTER(MdSystem)), c_size_t, c_int]),
    "rcl_md_system_free": (None, [POINTER(MdSystem)]),
    "rcl_md_lattice": (c_int, [POINTER(POINTER(MdSystem)), c_char_p, c_size_t, c_double, c_double, c_uint64]),
    "rcl_md_displace": (c_int, [POINTER(MdSystem), c_double, c_uint64]),
    "rcl_md_read": (c_int, [POINTER(POINTER(MdSystem)), POINTER(MdLj), c_char_p]),
    "rcl_md_path_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_md_mixing_parse": (c_int, [POINTER(c_int), c_char_p]),
    "rcl_md_create": (c_int, [POINTER(_P), _P, c_int, POINTER(MdSystem), POINTER(MdLj), POINTER(MdOptions)]),
    "rcl_md_free": (None, [_P]),
    "rcl_md_run": (c_int, [_P, c_size_t, c_double, c_size_t, MD_THERMO_FN, c_void_p]),
    "rcl_md_thermo_get": (c_int, [_P, POINTER(MdThermo)]),
    "rcl_md_get_state": (c_int, [_P, _P, _P]),
    "rcl_md_get_forces": (c_int, [_P, _P, POINTER(c_int64)]),
    "rcl_md_natoms": (c_size_t, [_P]),
    "rcl_md_step": (c_size_t, [_P]),
    "rcl_program_build": (c_int, [POINTER(_P), _P, c_char_p, c_size_t, POINTER(ProgramOptions)]),
    "rcl_program_free": (None, [_P]),
    "rcl_program_cl": (_P, [_P]),
    "rcl_program_build_options": (c_char_p, [_P]),
    "rcl_policy_lint_source": (c_int, [c_char_p, c_size_t, c_char_p]),
    "rcl_policy_check_options": (c_int, [c_char_p]),
    "rcl_tune_kernel_count": (c_size_t, []),
    "rcl_tune_kernel_name": (c_char_p, [c_size_t]),
    "rcl_tune_kernel_default_size": (c_size_t, [c_char_p]),
    "rcl_tune_origin_name": (c_char_p, [c_int]),
    "rcl_tune_get": (c_int, [POINTER(TuneChoice), _P, c_char_p, c_int, c_size_t]),
    "rcl_tune": (c_int, [POINTER(TuneReport), _P, c_char_p, c_int, c_size_t, POINTER(TuneOptions)]),
    "rcl_program_create_kernel": (c_int, [POINTER(_P), _P, c_char_p]),
}

for _name, (_res, _args) in _PROTOS.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args

STRUCTS = {
    "rcl_device_info": DeviceInfo,
    "rcl_device_profile": DeviceProfile,
    "rcl_context_options": ContextOptions,
    "rcl_queue_args": QueueArgs,
    "rcl_reduce_options": ReduceOptions,
    "rcl_stencil_desc": StencilDesc,
    "rcl_sor_desc": SorDesc,
    "rcl_stencil_options": StencilOptions,
    "rcl_csr": Csr,
    "rcl_spmv_options": SpmvOptions,
    "rcl_cg_options": CgOptions,
    "rcl_cg_result": CgResult,
    "rcl_grid": Grid,
    "rcl_md_system": MdSystem,
    "rcl_md_lj": MdLj,
    "rcl_md_options": MdOptions,
    "rcl_md_thermo": MdThermo,
    "rcl_program_options": ProgramOptions,
    "rcl_tune_choice": TuneChoice,
    "rcl_tune_report": TuneReport,
    "rcl_tune_options": TuneOptions,
}
