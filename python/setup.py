"""Builds the mxq package: the Python modules, libmxq inside the package (under its SONAME, where
the package and the native operators find it), and, when torch is installed, the native torch
operators mxq._torch_ops compiled against that torch.

    pip install --no-build-isolation ./python      # from the repository root
    pip wheel --no-build-isolation ./python        # a wheel that carries libmxq

libmxq comes from MXQ_LIBMXQ (the absolute path of a libmxq.so built before, with or without CUDA)
when that is set, else from a CMake build of this repository in build-python/ (the library alone:
CUDA when nvcc is found, as for the project; MXQ_CMAKE_ARGS adds configure options, e.g.
-DMXQ_ENABLE_CUDA=OFF). MXQ_TORCH_OPS=0 skips the torch operators.
"""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
with open(os.path.join(HERE, "mxq", "VERSION"), encoding="utf-8") as f:
    VERSION = f.read().strip()
SONAME = "libmxq.so." + ".".join(VERSION.split(".")[:2])  # CMake's SOVERSION: major.minor


def _built_libmxq():
    """The path of a built libmxq.so, building it with CMake unless MXQ_LIBMXQ names one."""
    given = os.environ.get("MXQ_LIBMXQ")
    if given:
        if not os.path.isfile(given):
            sys.exit(f"setup.py: MXQ_LIBMXQ={given} is not a file (give an absolute path: pip "
                     f"runs setup.py in its own folder)")
        return os.path.realpath(given)
    build = os.path.join(REPO, "build-python")
    env = dict(os.environ, PATH="/usr/local/cuda/bin" + os.pathsep + os.environ.get("PATH", ""))
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.check_call(["cmake", "-S", REPO, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
                           "-DMXQ_BUILD_TESTS=OFF", "-DMXQ_BUILD_TOOLS=OFF", "-DMXQ_BUILD_BENCH=OFF",
                           *shlex.split(os.environ.get("MXQ_CMAKE_ARGS", ""))],
                          env=env)
    subprocess.check_call(["cmake", "--build", build, "--target", "mxq", "-j", str(os.cpu_count() or 2)],
                          env=env)
    return os.path.realpath(os.path.join(build, "src", "libmxq.so"))


_libmxq = None


def _copy_libmxq(package_dir):
    """libmxq into package_dir under its SONAME (once per run); returns the copy's path."""
    global _libmxq
    if _libmxq is None:
        _libmxq = _built_libmxq()
    os.makedirs(package_dir, exist_ok=True)
    target = os.path.join(package_dir, SONAME)
    if os.path.realpath(target) != _libmxq:
        shutil.copyfile(_libmxq, target)
    return target


class BuildPy(build_py):
    def run(self):
        super().run()
        _copy_libmxq(os.path.join(self.build_lib, "mxq"))


class BuildExt(build_ext):
    def build_extension(self, ext):
        package_dir = os.path.dirname(self.get_ext_fullpath(ext.name))
        # A toolchain that links libstdc++ statically puts a copy into the module; unless its symbols
        # stay hidden, the process's libstdc++ (Python's, torch's) binds some of them and the two
        # copies mix (seen: a crash formatting a number into an error message).
        ext.extra_link_args = [_copy_libmxq(package_dir), "-Wl,-rpath,$ORIGIN",
                               "-Wl,--exclude-libs,ALL"] + ext.extra_link_args
        super().build_extension(ext)


class BinaryDistribution(Distribution):
    """The wheel carries libmxq, a native library, even when no extension module is built."""

    def has_ext_modules(self):
        return True


def _torch_extensions():
    if os.environ.get("MXQ_TORCH_OPS", "1") == "0":
        return [], {}
    try:
        import torch  # noqa: F401
        from torch.utils import cpp_extension
    except ImportError:
        print("setup.py: torch is not installed: building without the native torch operators")
        return [], {}
    sources = [os.path.join("csrc", "torch_ops.cpp")]
    kwargs = dict(include_dirs=[os.path.join(REPO, "include"), os.path.join(HERE, "csrc")],
                  extra_compile_args=["-O2"])
    cuda = torch.version.cuda is not None and cpp_extension.CUDA_HOME is not None
    if cuda:
        ext = cpp_extension.CUDAExtension("mxq._torch_ops", sources,
                                          define_macros=[("MXQ_TORCH_CUDA", "1")], **kwargs)
    else:
        ext = cpp_extension.CppExtension("mxq._torch_ops", sources, **kwargs)
    # The torch build extension sets torch's compiler flags; ours adds libmxq and its run path.
    base = cpp_extension.BuildExtension.with_options(use_ninja=shutil.which("ninja") is not None)

    class TorchBuildExt(BuildExt, base):
        pass

    return [ext], {"build_ext": TorchBuildExt}


extensions, commands = _torch_extensions()
setup(
    version=VERSION,
    ext_modules=extensions,
    cmdclass={"build_py": BuildPy, "build_ext": BuildExt, **commands},
    distclass=BinaryDistribution,
)
