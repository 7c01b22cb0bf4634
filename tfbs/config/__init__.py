"""The pipeline's one configuration object.

A YAML file (``conf/*.yaml``) is read, dotted ``key=value`` overrides from
the command line are applied, and the result is validated into a single
frozen :class:`PipelineConfig` that every stage receives. Every default lives
in this package (one module per section or two), so a stage never invents its own.

Errors name the file and the offending key, for example::

    conf/demo.yaml: train.placement.num_workers: Input should be greater than 0
"""

from tfbs.config.base import DEFAULT_GPU_DISCOVERY_SCRIPT, Identity, cpu_set
from tfbs.config.inputs import DataConfig, GenerateConfig, PreprocessConfig, SparkConfig, TFSpec
from tfbs.config.loading import load_config
from tfbs.config.model import EasyFlowConfig, FactorNetConfig, ModelConfig, MotifCNNConfig
from tfbs.config.pipeline import PipelineConfig
from tfbs.config.placement import PlacementConfig
from tfbs.config.stages import EvaluateConfig, ExplainConfig, PredictConfig, UnseenConfig
from tfbs.config.train import TrainConfig
from tfbs.errors import ConfigError

__all__ = [
    "DEFAULT_GPU_DISCOVERY_SCRIPT",
    "EasyFlowConfig",
    "MotifCNNConfig",
    "PredictConfig",
    "cpu_set",
    "ConfigError",
    "DataConfig",
    "EvaluateConfig",
    "ExplainConfig",
    "FactorNetConfig",
    "Identity",
    "GenerateConfig",
    "ModelConfig",
    "PipelineConfig",
    "PlacementConfig",
    "PreprocessConfig",
    "SparkConfig",
    "TFSpec",
    "TrainConfig",
    "UnseenConfig",
    "load_config",
]
