"""Build the Cython extensions of ``ccengine`` during ``pip install``."""

from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

_COMPILE_ARGS = ["-O3", "-fno-strict-aliasing"]

extensions = [
    Extension(
        f"ccengine.{name}",
        [f"ccengine/{name}.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=_COMPILE_ARGS,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in sorted(p.stem for p in Path("ccengine").glob("*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True, "initializedcheck": False},
    )
)
