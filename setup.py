"""Map the repository's top-level folders onto the ``raleval`` import package.

``envs/`` installs as ``raleval.envs``, ``tasks/`` as ``raleval.tasks`` and so on, for both
``pip install -e .`` and a built wheel; nothing is installed as a top-level ``envs`` module.
Folders of data without an ``__init__.py`` (the prompts) are listed too, as namespace packages:
setuptools warns about, and may one day drop, an importable folder it ships as data only.
"""

from setuptools import find_namespace_packages, setup

_NOT_PACKAGES = ["*__pycache__*"]


def _find(where: str) -> list[str]:
    return find_namespace_packages(where, exclude=_NOT_PACKAGES)


SUBPACKAGE_FOLDERS = ("envs", "workflows", "agents", "grading", "tasks", "analysis")


def _layout() -> tuple[list[str], dict[str, str]]:
    packages = ["raleval", *(f"raleval.{p}" for p in _find("raleval"))]
    package_dir = {"raleval": "raleval"}
    for folder in SUBPACKAGE_FOLDERS:
        root = f"raleval.{folder}"
        package_dir[root] = folder
        packages.append(root)
        packages.extend(f"{root}.{p}" for p in _find(folder))
    return packages, package_dir


_packages, _package_dir = _layout()
setup(packages=_packages, package_dir=_package_dir)
