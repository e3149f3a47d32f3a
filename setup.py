"""Maps the top-level folders onto the gnnbench namespace (see Note [import names] in pyproject.toml)."""
from setuptools import find_packages, setup

FOLDERS = {  # import name -> folder
    "gnnbench": "gnnbench",
    "gnnbench.systems": "systems",
    "gnnbench.dsl": "dsl",
    "gnnbench.models": "models",
    "gnnbench.datasets": "datasets",
}

packages, package_dir = [], {}
for name, folder in FOLDERS.items():
    package_dir[name] = folder
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=package_dir)
