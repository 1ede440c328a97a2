"""What a run records of its machine (rfig_exp.run.provenance): enough to tell two machines apart
that a model name and a core count record alike."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from rfig_exp.run import provenance

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x1000065
cache size\t: 1024 KB
flags\t\t: fpu sse4_2 avx2 fma avx avx512f avx512bw

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
flags\t\t: fpu sse4_2 avx2 fma avx avx512f avx512bw
"""

ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes sve
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
CPU revision\t: 1
"""


def test_cpuinfo_reads_the_first_processor_and_its_identity():
    fields = provenance.cpuinfo_fields(X86)
    assert fields["model name"] == "AMD EPYC" and fields["processor"] == "0"
    assert provenance.cpu_identity(fields) == {"vendor": "AuthenticAMD", "family": "26", "model": "2",
                                               "stepping": "1", "microcode": "0x1000065"}
    arm = provenance.cpu_identity(provenance.cpuinfo_fields(ARM))
    assert arm == {"implementer": "0x41", "part": "0xd40", "variant": "0x1", "revision": "1"}


def test_isa_flags_hash_the_sorted_set_and_name_the_notable_ones():
    isa = provenance.isa_flags(provenance.cpuinfo_fields(X86))
    expected = hashlib.sha256(" ".join(sorted(["fpu", "sse4_2", "avx2", "fma", "avx", "avx512f", "avx512bw"]))
                              .encode()).hexdigest()[:16]
    assert isa == {"count": 7, "sha256_16": expected,
                   "notable": ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw"]}
    # the same features in another order: the same hash; one feature fewer: another
    shuffled = provenance.isa_flags({"flags": "avx512bw avx512f avx fma avx2 sse4_2 fpu"})
    assert shuffled == isa
    assert provenance.isa_flags({"flags": "fpu sse4_2 avx2 fma avx avx512f"})["sha256_16"] != expected
    assert provenance.isa_flags(provenance.cpuinfo_fields(ARM))["notable"] == ["asimd", "sve"]
    assert provenance.isa_flags({}) is None


def test_cache_sizes_from_a_sysfs_tree(tmp_path):
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                            (3, "Unified", "32768K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (d / name).write_text(f"{value}\n")
    assert provenance.cache_sizes(tmp_path) == {"L1d": "48K", "L1i": "32K", "L2": "1024K", "L3": "32768K"}
    assert provenance.cache_sizes(tmp_path / "none") == {}


def test_machine_records_what_tells_machines_apart_without_jax(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    m = provenance.machine()
    assert {"cpu", "cores", "arch", "cpu_id", "isa", "caches", "numerics_env"} <= set(m)
    assert m["numerics_env"]["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=false"
    assert "jax_build" not in m and "device_kind" not in m  # not asked: no JAX
    json.dumps(m)  # summary.json holds it as it is


def test_machine_with_devices_records_jaxlib_s_build():
    code = ("import json, jax; from rfig_exp.run import provenance; "
            "print(json.dumps(provenance.machine(jax.devices())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    m = json.loads(out.stdout.strip().splitlines()[-1])
    build = m["jax_build"]
    assert build["jaxlib"] and build["platform_version"]
    assert m["device_kind"] and m["backend"]
