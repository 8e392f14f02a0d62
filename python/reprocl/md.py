"""Molecular dynamics: Lennard-Jones systems (fcc/sc lattices, LAMMPS data files), velocity-Verlet runs
with a thermo callback, and the state as arrays — the same trajectory, bit for bit, on every device."""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, byref, c_void_p
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._arrays import DTypeLike, Handle, np_dtype, ptr, rcl_dtype
from ._lib import MD_MAX_TYPES, lib
from .core import Context, _count, _ctx, _parse, _u64
from .errors import check


class System:
    """Atoms, box and masses (rcl_md_system, binary64 on the host). Arrays are copies."""

    def __init__(self, handle: Any) -> None:
        self._p = handle

    @classmethod
    def lattice(cls, kind: str = "fcc", cells: int = 4, density: float = 0.8442, temperature: float = 1.44,
                seed: int = 87287) -> "System":
        """rcl_md_lattice: as `reprocl md --lattice KIND --cells N --density R --temp T --seed S`."""
        out = POINTER(_lib.MdSystem)()
        check(lib.rcl_md_lattice(byref(out), kind.encode(), _count(cells, "cells"), float(density),
                                 float(temperature), _u64(seed, "seed")))
        return cls(out)

    @classmethod
    def read(cls, path: Union[str, os.PathLike]) -> tuple["System", "LJ"]:
        """A LAMMPS data file (atom_style atomic) or extended XYZ: the system and the pair coefficients
        it holds (on top of the defaults: cutoff 2.5, epsilon = sigma = 1)."""
        out = POINTER(_lib.MdSystem)()
        lj = LJ()
        check(lib.rcl_md_read(byref(out), byref(lj._s), os.fsencode(path)))
        return cls(out), lj

    def displace(self, amplitude: float, seed: int = 1) -> "System":
        """rcl_md_displace: moves every coordinate by amplitude*(u - 0.5), in place; returns self."""
        check(lib.rcl_md_displace(self._p, float(amplitude), _u64(seed, "seed")))
        return self

    @property
    def _s(self) -> _lib.MdSystem:
        return self._p.contents

    @property
    def natoms(self) -> int:
        return int(self._s.natoms)

    def _arr(self, p: Any, cols: int, dt: Any) -> np.ndarray:
        n = self.natoms * cols
        a = np.ctypeslib.as_array(p, (n,)).copy() if p else np.zeros(n, dt)
        return a.reshape(self.natoms, cols) if cols > 1 else a

    @property
    def positions(self) -> np.ndarray:
        return self._arr(self._s.pos, 3, np.float64)

    @property
    def velocities(self) -> np.ndarray:
        return self._arr(self._s.vel, 3, np.float64)

    @property
    def types(self) -> np.ndarray:
        return self._arr(self._s.type, 1, np.int32)

    @property
    def box(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return tuple(self._s.lo), tuple(self._s.hi)

    def __del__(self) -> None:
        try:
            if self._p:
                lib.rcl_md_system_free(self._p)
                self._p = None
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<reprocl.md.System {self.natoms} atoms, box {self.box}>"


class LJ:
    """Lennard-Jones 12-6 parameters (rcl_md_lj): cutoff, shift, mixing, per-type epsilon/sigma (type t at
    [t - 1]), explicit pairs with set_pair."""

    def __init__(self, cutoff: float = 2.5, shift: bool = False, mixing: str = "geometric",
                 epsilon: Optional[Sequence[float]] = None, sigma: Optional[Sequence[float]] = None) -> None:
        s = _lib.MdLj(1, float(cutoff), int(bool(shift)), _parse(lib.rcl_md_mixing_parse, mixing, "mixing"))
        for t in range(MD_MAX_TYPES):
            s.epsilon[t] = 1.0 if epsilon is None or t >= len(epsilon) else float(epsilon[t])
            s.sigma[t] = 1.0 if sigma is None or t >= len(sigma) else float(sigma[t])
        self._s = s

    @property
    def cutoff(self) -> float:
        return float(self._s.cutoff)

    def set_pair(self, type_i: int, type_j: int, epsilon: float, sigma: float) -> None:
        for a, b in ((type_i, type_j), (type_j, type_i)):
            if not 1 <= a <= MD_MAX_TYPES:
                raise ValueError(f"type {a} out of 1..{MD_MAX_TYPES}")
            self._s.pair_epsilon[a - 1][b - 1], self._s.pair_sigma[a - 1][b - 1] = epsilon, sigma
            self._s.pair_set[a - 1][b - 1] = 1


@dataclass(frozen=True)
class Thermo:
    """Thermodynamic state at a step (totals; the same bits on every device)."""

    step: int
    natoms: int
    pe: float
    ke: float
    etotal: float
    temperature: float
    pressure: float
    virial: float
    neighbor_builds: int


def _thermo(t: _lib.MdThermo) -> Thermo:
    return Thermo(*(getattr(t, f[0]) for f in _lib.MdThermo._fields_))


ThermoCallback = Callable[[Thermo], Optional[bool]]


class Simulation(Handle):
    """A simulation (rcl_md) on ctx's device, or on the host reference with host=True (O(N^2), for
    tests). The forces of the initial positions are computed on creation. path: "auto", "gather",
    "symmetric", "allpairs", "task" (same bits, different speed)."""

    def __init__(self, system: System, lj: Optional[LJ] = None, dtype: DTypeLike = "float64", *,
                 ctx: Optional[Context] = None, host: bool = False, path: str = "auto", skin: float = 0.0) -> None:
        self.dtype = np_dtype(dtype)
        self._system = system  # the C simulation copies it; kept for natoms
        opts = _lib.MdOptions(1, _parse(lib.rcl_md_path_parse, path, "path"))
        opts.skin = float(skin)
        lj = lj or LJ()
        h = c_void_p()
        check(lib.rcl_md_create(byref(h), None if host else _ctx(ctx), rcl_dtype(self.dtype), system._p,
                                byref(lj._s), byref(opts)))
        self._h: Optional[int] = h.value

    _free = staticmethod(lib.rcl_md_free)
    _what = "reprocl.md.Simulation"

    def run(self, steps: int, dt: float = 0.005, thermo_every: int = 0,
            callback: Optional[ThermoCallback] = None) -> Thermo:
        """`steps` velocity-Verlet steps; callback(Thermo) every thermo_every steps and at the first and
        last step (return True to stop early; an exception stops the run and is re-raised). Returns the
        thermo state at the end."""
        raised: list[BaseException] = []

        def cb(_md: Any, th: Any, _user: Any) -> int:
            try:
                return 1 if callback is not None and callback(_thermo(th.contents)) else 0
            except BaseException as e:  # noqa: BLE001 -- re-raised after the C call returns
                raised.append(e)
                return 1

        fn = _lib.MD_THERMO_FN(cb) if callback is not None else _lib.MD_THERMO_FN()
        rc = lib.rcl_md_run(self.handle, _count(steps, "steps"), float(dt),
                            _count(thermo_every, "thermo_every") if callback else 0, fn, None)
        if raised:
            raise raised[0]
        check(rc)
        return self.thermo()

    def thermo(self) -> Thermo:
        t = _lib.MdThermo()
        check(lib.rcl_md_thermo_get(self.handle, byref(t)))
        return _thermo(t)

    @property
    def natoms(self) -> int:
        return int(lib.rcl_md_natoms(self.handle))

    @property
    def step(self) -> int:
        return int(lib.rcl_md_step(self.handle))

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, velocities) as (natoms, 3) arrays of the simulation's dtype."""
        pos = np.empty((self.natoms, 3), self.dtype)
        vel = np.empty((self.natoms, 3), self.dtype)
        check(lib.rcl_md_get_state(self.handle, ptr(pos), ptr(vel)))
        return pos, vel

    def forces(self) -> tuple[np.ndarray, np.ndarray]:
        """(forces in the dtype, the raw int64 fixed-point sums), each (natoms, 3)."""
        f = np.empty((self.natoms, 3), self.dtype)
        fixed = np.empty((self.natoms, 3), np.int64)
        check(lib.rcl_md_get_forces(self.handle, ptr(f), fixed.ctypes.data_as(POINTER(ctypes.c_int64))))
        return f, fixed

    def state_digest(self) -> str:
        """SHA-256 of positions then velocities: `reprocl md`'s "final state sha256"."""
        from .core import digest

        pos, vel = self.state()
        return digest(np.concatenate([pos.ravel(), vel.ravel()]))

    def __enter__(self) -> "Simulation":
        return self
