"""Installs app/, daemon/ and model_registry/ as localllm.app, localllm.daemon and
localllm.model_registry: one namespace in site-packages, the folders where the layout keeps them.
Everything else is declared in pyproject.toml, whose tables cannot prefix the packages found."""

from setuptools import find_namespace_packages, setup

FOLDERS = ("app", "daemon", "model_registry")

found = find_namespace_packages(
    include=[*FOLDERS, *(f"{folder}.*" for folder in FOLDERS)], exclude=["*__pycache__*"]
)
setup(
    packages=[f"localllm.{package}" for package in found],
    package_dir={f"localllm.{folder}": folder for folder in FOLDERS},
)
