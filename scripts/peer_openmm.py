#!/usr/bin/env python3
"""OpenMM peer of `reprocl bench --family md`: the same Lennard-Jones system, the same initial state.

usage: peer_openmm.py --state STATE.xyz --steps S [--repeats R] [--dt 0.005] [--cutoff 2.5]
                      [--platforms Reference,CPU,OpenCL,CUDA,HIP] [--precisions single,double]
                      [--opencl-platform I --opencl-device J] [--gpu-device K]
                      [--check CHECK.xyz] [--reference-max-atoms 4000]

STATE.xyz (and CHECK.xyz) are extended-XYZ frames as `reprocl md --out` and rcl_md_write_xyz write them:
an orthorhombic periodic box, type 1 atoms of mass 1, positions and velocities. Reduced LJ units map to
OpenMM's exactly: sigma = 1 nm, epsilon = 1 kJ/mol, mass = 1 dalton, so the time unit is 1 ps and a
velocity in nm/ps is the reduced velocity. The force field is NonbondedForce with CutoffPeriodic at the
cutoff, no charges (so its reaction field does nothing), no switching function, no dispersion correction:
the truncated, unshifted LJ 12-6 of reprocl's default. The integrator is OpenMM's VerletIntegrator
(leapfrog, velocities half a step apart from reprocl's velocity Verlet: the same trajectory to first order,
not the same bits). OpenMM keeps its own neighbour lists; it has no skin setting like reprocl's.

For each platform (Reference only up to --reference-max-atoms atoms; CPU and Reference have one precision
each, reported as "single" and "double") and precision: one Context from STATE, the potential energy of
STATE (and of CHECK), one untimed warm-up of S steps, then R timed runs of S steps each (a positions
download closes each run, so the time includes all the work). Writes one JSON document on stdout:
  {"openmm_version": V, "natoms": N, "steps": S, "results": [ {"platform", "precision", "device",
   "time_s": {"median", "min", "max"}, "steps_per_s", "setup_s", "pe_per_atom", "check_pe_per_atom"} or
   {"platform", "precision", "skipped": WHY} ]}
or {"skipped": "openmm not importable: WHY"} where OpenMM cannot be imported: never a failure. Exit status
2 for bad arguments or an unreadable state file.
"""
import argparse
import json
import os
import statistics
import sys
import time


def emit(doc):
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


def stdout_for_json_only():
    """OpenMM's C++ code prints warnings on file descriptor 1 ("Using an unsupported OpenCL
    implementation"): send them to stderr, keep the real stdout for the JSON document."""
    sys.stdout.flush()
    out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(out, "w")


def read_xyz(path):
    """(box lengths, positions, velocities) of the one frame of an extended-XYZ file."""
    with open(path) as f:
        n = int(f.readline())
        head = f.readline()
        lat = head.split('Lattice="', 1)[1].split('"', 1)[0].split()
        box = (float(lat[0]), float(lat[4]), float(lat[8]))
        pos, vel = [], []
        for _ in range(n):
            w = f.readline().split()
            pos.append((float(w[1]), float(w[2]), float(w[3])))
            vel.append((float(w[4]), float(w[5]), float(w[6])) if len(w) >= 7 else (0.0, 0.0, 0.0))
    return box, pos, vel


def build_system(mm, box, natoms, cutoff):
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(mm.Vec3(box[0], 0, 0), mm.Vec3(0, box[1], 0), mm.Vec3(0, 0, box[2]))
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(cutoff)
    nb.setUseSwitchingFunction(False)
    nb.setUseDispersionCorrection(False)
    for _ in range(natoms):
        system.addParticle(1.0)
        nb.addParticle(0.0, 1.0, 1.0)  # charge, sigma (nm), epsilon (kJ/mol)
    system.addForce(nb)
    return system


def platform_properties(name, precision, a):
    if name == "OpenCL":
        props = {"Precision": precision}
        if a.opencl_platform is not None:
            props["OpenCLPlatformIndex"] = str(a.opencl_platform)
        if a.opencl_device is not None:
            props["DeviceIndex"] = str(a.opencl_device)
        return props
    if name in ("CUDA", "HIP"):
        props = {"Precision": precision}
        if a.gpu_device is not None:
            props["DeviceIndex"] = str(a.gpu_device)
        return props
    return {}


def device_name(mm, ctx, platform):
    for prop in ("DeviceName", "Threads"):
        if prop in platform.getPropertyNames():
            v = platform.getPropertyValue(ctx, prop)
            return v if prop == "DeviceName" else f"host CPU, {v} threads"
    return "host CPU"


def energy_per_atom(mm, ctx, natoms):
    e = ctx.getState(getEnergy=True).getPotentialEnergy()
    return e.value_in_unit(mm.unit.kilojoule_per_mole) / natoms


def run_case(mm, a, system, state, check, name, precision):
    """One platform and precision: the record of its timings and energies."""
    box, pos, vel = state
    n = len(pos)
    t0 = time.perf_counter()
    integ = mm.VerletIntegrator(a.dt)
    platform = mm.Platform.getPlatformByName(name)
    ctx = mm.Context(system, integ, platform, platform_properties(name, precision, a))
    rec = {"platform": name, "precision": precision, "device": device_name(mm, ctx, platform)}
    if check is not None:
        ctx.setPositions(check[1])
        rec["check_pe_per_atom"] = energy_per_atom(mm, ctx, n)
    ctx.setPositions(pos)
    ctx.setVelocities(vel)
    rec["pe_per_atom"] = energy_per_atom(mm, ctx, n)
    rec["setup_s"] = time.perf_counter() - t0
    times = []
    for r in range(a.repeats + 1):  # the first run is the warm-up
        t1 = time.perf_counter()
        integ.step(a.steps)
        ctx.getState(getPositions=True)
        if r:
            times.append(time.perf_counter() - t1)
    med = statistics.median_low(times)
    rec["time_s"] = {"median": med, "min": min(times), "max": max(times)}
    rec["steps_per_s"] = a.steps / med
    del ctx, integ
    return rec


def cases(mm, a, natoms):
    have = {mm.Platform.getPlatform(i).getName() for i in range(mm.Platform.getNumPlatforms())}
    for name in a.platforms.split(","):
        fixed = {"Reference": "double", "CPU": "single"}.get(name)
        for precision in a.precisions.split(","):
            if fixed and precision != fixed:
                continue
            why = None
            if name not in have:
                fails = [f for f in mm.Platform.getPluginLoadFailures() if name in f]
                why = f"OpenMM {mm.version.version} has no {name} platform here" + (f": {fails[0]}" if fails else "")
            elif name == "Reference" and natoms > a.reference_max_atoms:
                why = f"Reference platform only up to {a.reference_max_atoms} atoms (too slow)"
            yield name, precision, why


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--state", required=True)
    p.add_argument("--check")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dt", type=float, default=0.005)
    p.add_argument("--cutoff", type=float, default=2.5)
    p.add_argument("--platforms", default="Reference,CPU,OpenCL,CUDA")
    p.add_argument("--precisions", default="single,double")
    p.add_argument("--opencl-platform", type=int)
    p.add_argument("--opencl-device", type=int)
    p.add_argument("--gpu-device", type=int)
    p.add_argument("--reference-max-atoms", type=int, default=4000)
    a = p.parse_args()
    if a.steps < 1 or a.repeats < 1:
        p.error("--steps and --repeats must be >= 1")
    stdout_for_json_only()
    try:
        import openmm as mm
        import openmm.unit  # noqa: F401
    except Exception as e:  # not installed, or a broken install: the peer is skipped, never a failure
        emit({"skipped": f"openmm not importable: {e}"})
        return 0
    try:
        state = read_xyz(a.state)
        check = read_xyz(a.check) if a.check else None
    except (OSError, ValueError, IndexError) as e:
        print(f"peer_openmm.py: cannot read the state: {e}", file=sys.stderr)
        return 2
    n = len(state[1])
    system = build_system(mm, state[0], n, a.cutoff)
    out = {"openmm_version": mm.version.version, "natoms": n, "steps": a.steps, "results": []}
    for name, precision, why in cases(mm, a, n):
        if why is None:
            try:
                out["results"].append(run_case(mm, a, system, state, check, name, precision))
                continue
            except Exception as e:  # OpenMM's OpenMMException: a platform that cannot run here
                why = f"OpenMM {name} {precision} failed: {str(e).strip().splitlines()[0] if str(e).strip() else e}"
        out["results"].append({"platform": name, "precision": precision, "skipped": why})
    emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
