"""``installers/llama_build.py``: the llama.cpp build each computer gets, from fake tool output."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_script():
    sys.path.insert(0, str(ROOT / "installers"))  # as when it runs: llama_fit is beside it
    spec = importlib.util.spec_from_file_location("llama_build", ROOT / "installers/llama_build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["llama_build"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


llama_build = _load_script()

NVIDIA_SMI = ("nvidia-smi", "--query-gpu=name", "--format=csv,noheader")
NVCC_OUT = (
    "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"
)
VULKAN_GPU = """\
Devices:
========
GPU0:
\tapiVersion         = 1.3.255
\tdeviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
\tdeviceName         = AMD Radeon RX 7900 XTX (RADV NAVI31)
GPU1:
\tdeviceType         = PHYSICAL_DEVICE_TYPE_CPU
\tdeviceName         = llvmpipe (LLVM 15.0.6, 256 bits)
"""
VULKAN_SOFTWARE_ONLY = """\
GPU0:
\tdeviceType         = PHYSICAL_DEVICE_TYPE_CPU
\tdeviceName         = llvmpipe (LLVM 15.0.6, 256 bits)
"""
ROCMINFO = (
    "  Name:                    gfx1100\n  Name:                    gfx1100\n  Name: gfx90a\n"
)


def tools(system="Linux", machine="x86_64", found=(), outputs=None):
    """A Toolchain whose ``which`` knows ``found`` and whose ``run`` answers from ``outputs``."""
    outputs = {tuple(argv): text for argv, text in (outputs or {}).items()}

    def which(name):
        return f"/usr/bin/{name}" if name in found else None

    return llama_build.Toolchain(system, machine, which, lambda argv: outputs.get(tuple(argv)))


CUDA_HERE = {NVIDIA_SMI: "NVIDIA GeForce RTX 4090\n", ("/usr/bin/nvcc", "--version"): NVCC_OUT}
ROCM = {
    ("hipconfig", "-R"): "/opt/rocm\n",
    ("hipconfig", "-l"): "/opt/rocm/llvm/bin\n",
    ("rocminfo",): ROCMINFO,
}


@pytest.mark.parametrize(
    ("case", "backend", "cmake_args", "portable"),
    [
        (tools("Darwin", "arm64"), "metal", ("-DGGML_METAL=on",), False),
        (tools("Darwin", "x86_64"), "cpu", ("-DGGML_METAL=off",), False),
        (tools(found={"nvcc"}, outputs=CUDA_HERE), "cuda", ("-DGGML_CUDA=on",), False),
        (
            tools("Windows", "AMD64", found={"nvcc"}, outputs=CUDA_HERE),
            "cuda",
            ("-DGGML_CUDA=on",),
            False,
        ),
        (
            tools(found={"hipconfig"}, outputs=ROCM),
            "rocm",
            ("-DGGML_HIP=on", "-DAMDGPU_TARGETS=gfx1100;gfx90a"),
            False,
        ),
        (
            tools(found={"glslc"}, outputs={("vulkaninfo", "--summary"): VULKAN_GPU}),
            "vulkan",
            ("-DGGML_VULKAN=on",),
            False,
        ),
        (tools(), "cpu", (), False),
        (tools("Windows", "AMD64"), "cpu", (), False),
        (tools(), "cpu", ("-DGGML_NATIVE=OFF",), True),
    ],
    ids=[
        "apple-silicon",
        "intel-mac",
        "cuda",
        "cuda-windows",
        "rocm",
        "vulkan",
        "nothing",
        "nothing-windows",
        "portable-cpu",
    ],
)
def test_detection_table(case, backend, cmake_args, portable):
    build = llama_build.detect(case, portable=portable)
    assert (build.backend, build.cmake_args) == (backend, cmake_args)
    assert build.reason


def test_cuda_kernels_are_built_for_the_cards_here_only_unless_portable():
    caps = ("nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader")
    two_cards = {**CUDA_HERE, caps: "8.9\n9.0\n8.9\n"}
    build = llama_build.detect(tools(found={"nvcc"}, outputs=two_cards))
    assert build.cmake_args == ("-DGGML_CUDA=on", "-DCMAKE_CUDA_ARCHITECTURES=89;90")
    assert build.reason.endswith("kernels for sm_89, sm_90 only")
    portable = llama_build.detect(tools(found={"nvcc"}, outputs=two_cards), portable=True)
    assert portable.cmake_args == ("-DGGML_CUDA=on", "-DGGML_NATIVE=OFF")
    old_driver = {**CUDA_HERE, caps: 'Field "compute_cap" is not a valid field to query.\n'}
    assert llama_build.detect(tools(found={"nvcc"}, outputs=old_driver)).cmake_args == (
        "-DGGML_CUDA=on",
    )


def test_cuda_wins_over_vulkan_on_the_same_gpu():
    outputs = {**CUDA_HERE, ("vulkaninfo", "--summary"): VULKAN_GPU}
    build = llama_build.detect(tools(found={"nvcc", "glslc"}, outputs=outputs))
    assert build.backend == "cuda"
    assert "RTX 4090" in build.reason


def test_cuda_toolkit_without_a_gpu_builds_for_the_cpu_here_and_for_cuda_elsewhere():
    outputs = {("/usr/bin/nvcc", "--version"): NVCC_OUT}
    here = llama_build.detect(tools(found={"nvcc"}, outputs=outputs))
    assert here.backend == "cpu"
    assert any("CUDA 12.4 is installed but no NVIDIA GPU" in note for note in here.notes)
    elsewhere = llama_build.detect(tools(found={"nvcc"}, outputs=outputs), portable=True)
    assert elsewhere.cmake_args == ("-DGGML_CUDA=on", "-DGGML_NATIVE=OFF")


def test_nvcc_outside_path_is_found_in_the_usual_place():
    outputs = {NVIDIA_SMI: "Tesla T4\n", ("/usr/local/cuda/bin/nvcc", "--version"): NVCC_OUT}
    case = tools(outputs=outputs)
    case = llama_build.Toolchain(
        "Linux",
        "x86_64",
        lambda name: name if name.startswith("/usr/local/cuda") else None,
        case.run,
    )
    assert llama_build.detect(case).backend == "cuda"


def test_a_gpu_without_its_toolkit_is_named_in_a_note():
    build = llama_build.detect(tools(outputs={NVIDIA_SMI: "NVIDIA GeForce RTX 3060\n"}))
    assert build.backend == "cpu"
    assert build.notes == ("an NVIDIA GeForce RTX 3060 is here but not the CUDA toolkit (nvcc) "
                           "to build for it",)  # fmt: skip


def test_vulkan_needs_a_real_gpu_and_the_shader_compiler():
    software = {("vulkaninfo", "--summary"): VULKAN_SOFTWARE_ONLY}
    assert llama_build.detect(tools(found={"glslc"}, outputs=software)).backend == "cpu"
    no_glslc = llama_build.detect(tools(outputs={("vulkaninfo", "--summary"): VULKAN_GPU}))
    assert no_glslc.backend == "cpu"
    assert "glslc" in no_glslc.notes[0]


def test_rocm_passes_its_compiler_in_the_environment():
    build = llama_build.detect(tools(found={"hipconfig"}, outputs=ROCM))
    assert build.env == {"HIPCXX": "/opt/rocm/llvm/bin/clang", "HIP_PATH": "/opt/rocm"}


def test_rocm_without_a_gpu_here_is_skipped_unless_portable():
    outputs = {key: value for key, value in ROCM.items() if key != ("rocminfo",)}
    assert llama_build.detect(tools(found={"hipconfig"}, outputs=outputs)).backend == "cpu"
    portable = llama_build.detect(tools(found={"hipconfig"}, outputs=outputs), portable=True)
    assert portable.cmake_args == ("-DGGML_HIP=on", "-DGGML_NATIVE=OFF")


def test_apple_silicon_asks_no_tools():
    def refuse(*_args):
        raise AssertionError("no tool needs asking on Apple silicon")

    assert (
        llama_build.detect(llama_build.Toolchain("Darwin", "arm64", refuse, refuse)).backend
        == "metal"
    )


def test_pinned_version_is_read_from_pyproject():
    assert llama_build.pinned_version() == "0.3.36"


def test_main_prints_the_flags_to_export(capsys):
    assert llama_build.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("backend: ")
    assert "\ncpu: " in out and "SIMD flags:" in out  # what CI's log starts with
    assert "CMAKE_ARGS=" in out


def test_the_cpu_summary_names_the_sets_a_native_build_may_use(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
        "flags\t\t: fpu vme sse sse2 ssse3 avx avx2 avx512f amx_tile amx_int8 hypervisor\n\n"
        "processor\t: 1\n"
    )
    assert llama_build.cpu_summary(cpuinfo) == (
        "Intel(R) Xeon(R) Platinum 8480+; SIMD flags: sse sse2 ssse3 avx avx2 avx512f "
        "amx_tile amx_int8"
    )


def test_the_cpu_build_can_be_asked_for_on_a_gpu_machine():
    build = llama_build.detect(tools(found={"nvcc"}, outputs=CUDA_HERE), portable=True, cpu=True)
    assert (build.backend, build.cmake_args) == ("cpu", ("-DGGML_NATIVE=OFF",))
    mac = llama_build.detect(tools("Darwin", "arm64"), cpu=True)
    assert mac.cmake_args == ("-DGGML_METAL=off",)
