"""Map the repository's top-level folders onto the ``raleval`` import package.

``envs/`` installs as ``raleval.envs``, ``tasks/`` as ``raleval.tasks`` and so on, for both
``pip install -e .`` and a built wheel; nothing is installed as a top-level ``envs`` module.
"""

from setuptools import find_packages, setup

SUBPACKAGE_FOLDERS = ("envs", "workflows", "agents", "grading", "tasks", "analysis")


def _layout() -> tuple[list[str], dict[str, str]]:
    packages = ["raleval", *(f"raleval.{p}" for p in find_packages("raleval"))]
    package_dir = {"raleval": "raleval"}
    for folder in SUBPACKAGE_FOLDERS:
        root = f"raleval.{folder}"
        package_dir[root] = folder
        packages.append(root)
        packages.extend(f"{root}.{p}" for p in find_packages(folder))
    return packages, package_dir


_packages, _package_dir = _layout()
setup(packages=_packages, package_dir=_package_dir)
