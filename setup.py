"""tfbs-spark: Spark-fed distributed training of TF binding-site models."""

from setuptools import find_packages, setup

setup(
    name="tfbs-spark",
    version="0.1.0",
    description="ENCODE-DREAM TF binding-site training pipeline on Spark and TensorFlowOnSpark",
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["tfbs", "preprocess", "preprocess.*", "tf_models", "jobs"]),
    package_data={"": ["*.yaml"]},
    install_requires=[
        # TensorFlowOnSpark imports pkg_resources, removed in setuptools 82.
        "setuptools<82",
        "pyspark==4.3.0",
        "tensorflow-cpu==2.21.0",
        "tensorflowonspark==2.2.5",
        "tensorboard>=2.20",
        "pyarrow>=15",
        "numpy>=1.26",
        "pyyaml>=6",
        "pydantic>=2.6",
        "pyfaidx>=0.8",
        "matplotlib>=3.8",
    ],
    extras_require={
        # gcp-storage-emulator: the GCS stand-in of tests/gcs_emulator.py.
        "dev": ["pytest>=8", "scikit-learn>=1.4", "gcp-storage-emulator>=2026.7"],
        # gs:// goes through pyarrow's GcsFileSystem, built into pyarrow's wheels.
        "gcs": [],
        "hdfs": ["hdfs>=2.7"],
        # dags/tfbs_pipeline.py; resolves with the pins above (no constraints file needed).
        "airflow": ["apache-airflow==3.3.2"],
    },
    entry_points={"console_scripts": ["tfbs=tfbs.cli:main"]},
)
