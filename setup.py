"""Packaging lives in pyproject.toml; this shim keeps ``python setup.py`` and old pips working."""

from setuptools import setup

setup()
