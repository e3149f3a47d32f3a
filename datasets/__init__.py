"""Datasets for gnnbench: Planetoid citation graphs, karate club and named synthetic graphs.

``load_dataset("cora", data_dir=...)``, ``load_dataset("sbm:nodes=5000,seed=1")``;
``list_datasets()`` describes every name and its parameters.
"""
from .dataset import Dataset, DatasetInfo
from .registry import list_datasets, load_dataset

__all__ = ["Dataset", "DatasetInfo", "load_dataset", "list_datasets"]
