"""Packaging for tfnp_trax: Trax's API on TensorFlow NumPy."""

from setuptools import find_packages
from setuptools import setup

RL = ['gymnasium[classic-control]>=0.29']
NOTEBOOKS = ['nbclient>=0.7', 'nbformat>=5', 'ipykernel>=6', 'matplotlib>=3.5']
BENCH = ['keras>=3', 'psutil>=5']
# ONNX export (export.to_onnx) and its runtime, and LiteRT's interpreter for
# the TFLite flatbuffers export.to_tflite writes.
EXPORT = ['tf2onnx>=1.16', 'onnx>=1.14', 'onnxruntime>=1.17',
          'ai-edge-litert>=1.2']
TEST = (['pytest>=7', 'pytest-timeout>=2', 'pytest-xdist>=3',
         'scikit-learn>=1.0'] + RL + NOTEBOOKS + EXPORT)

setup(
    name='tfnp-trax',
    version='0.1.0',
    description="Trax's combinator deep-learning API, rebuilt on TensorFlow "
                'NumPy and tf.distribute.',
    long_description=open('README.md').read(),
    long_description_content_type='text/markdown',
    packages=find_packages(include=['tfnp_trax', 'tfnp_trax.*', 'distribute',
                                    'distribute.*']),
    python_requires='>=3.10',
    install_requires=[
        'tensorflow>=2.16',
        'tensorflow-probability>=0.24',
        'tf-keras>=2.16',
        'numpy>=1.23',
        'absl-py>=1.0',
        'tensorboard>=2.16',
        'scikit-learn>=1.0',
        'gin-config>=0.5',
        'tensorflow-datasets>=4.9',
        # tensorflow-datasets imports it when writing a dataset, but declares
        # it only for Python < 3.9.
        'importlib_resources>=5',
        'sentencepiece>=0.1.99',
    ],
    extras_require={
        'test': TEST,
        'rl': RL,
        'notebooks': NOTEBOOKS,
        'bench': BENCH,
        'export': EXPORT,
    },
    entry_points={'console_scripts': ['tfnp-trax=tfnp_trax.cli:run']},
)
