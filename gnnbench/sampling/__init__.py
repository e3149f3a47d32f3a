"""Mini-batch neighbour sampling: gnnbench's own sampler and adapters over PyG's and DGL's (issue 34)."""
from gnnbench.sampling.neighbor import Block, NeighborSampler, SampledBatch, Sampler, check_fanouts, epoch_batches
from gnnbench.sampling.hetero import HeteroBlock, HeteroNeighborSampler, HeteroSampledBatch, HeteroSampler
from gnnbench.sampling.adapters import SAMPLERS, load_sampler, make_sampler, sampler_unavailable_reason

__all__ = ["Block", "Sampler", "NeighborSampler", "SampledBatch", "check_fanouts", "epoch_batches", "SAMPLERS",
           "make_sampler", "load_sampler", "sampler_unavailable_reason", "HeteroBlock", "HeteroNeighborSampler",
           "HeteroSampledBatch", "HeteroSampler"]
