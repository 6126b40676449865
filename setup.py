"""Maps the top-level folders into one import namespace.

dataset_builder/ -> speedbench.dataset_builder, client/ -> speedbench.client,
sweep/ -> speedbench.sweep;
metrics/ (evaluate modules) and space/ (the Gradio app) are not packages.
"""
from setuptools import find_packages, setup

MAPPED_FOLDERS = {"speedbench.dataset_builder": "dataset_builder", "speedbench.client": "client",
                  "speedbench.sweep": "sweep"}


def _packages() -> list[str]:
    packages = find_packages(include=["speedbench", "speedbench.*"])
    for name, folder in MAPPED_FOLDERS.items():
        packages += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]
    return packages


setup(packages=_packages(), package_dir={"speedbench": "speedbench", **MAPPED_FOLDERS})
