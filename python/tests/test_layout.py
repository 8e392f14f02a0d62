"""The ctypes structures match the C headers: a C compiler prints sizeof and offsetof of every field and
the option structs' version numbers (a drift here would corrupt memory, not fail loudly)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reprocl import _lib
from conftest import ROOT

HEADERS = ["common", "profile", "context", "reduce", "stencil", "sparse", "grid", "md", "program", "tune"]
VERSIONS = {
    "RCL_CONTEXT_OPTIONS_VERSION": 1, "RCL_QUEUE_ARGS_VERSION": 1, "RCL_REDUCE_OPTIONS_VERSION": 2,
    "RCL_STENCIL_DESC_VERSION": 1, "RCL_SOR_DESC_VERSION": 1, "RCL_STENCIL_OPTIONS_VERSION": 1,
    "RCL_SPMV_OPTIONS_VERSION": 1, "RCL_CG_OPTIONS_VERSION": 1, "RCL_MD_LJ_VERSION": 1,
    "RCL_MD_OPTIONS_VERSION": 2, "RCL_PROGRAM_OPTIONS_VERSION": 1, "RCL_DEVICE_PROFILE_VERSION": 1, "RCL_TUNE_OPTIONS_VERSION": 1,
}


def test_struct_layouts(tmp_path: Path) -> None:
    cc = shutil.which(os.environ.get("CC", "cc"))
    inc = Path(os.environ.get("REPROCL_INCLUDE", ROOT / "include"))
    if not cc or not (inc / "reprocl" / "md.h").exists():
        pytest.skip(f"needs a C compiler and the headers ({inc}; set REPROCL_INCLUDE)")
    lines = ["#include <stddef.h>", "#include <stdio.h>"] + [f'#include "reprocl/{h}.h"' for h in HEADERS]
    lines.append("int main(void) {")
    expect = []
    for cname, cls in _lib.STRUCTS.items():
        lines.append(f'  printf("{cname} %zu\\n", sizeof({cname}));')
        expect.append(f"{cname} {__import__('ctypes').sizeof(cls)}")
        for f, _ in cls._fields_:
            lines.append(f'  printf("{cname}.{f} %zu\\n", offsetof({cname}, {f}));')
            expect.append(f"{cname}.{f} {getattr(cls, f).offset}")
    for macro, v in VERSIONS.items():
        lines.append(f'  printf("{macro} %u\\n", (unsigned){macro});')
        expect.append(f"{macro} {v}")
    lines.append("  return 0;\n}")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", f"-I{inc}", str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    assert got == expect
