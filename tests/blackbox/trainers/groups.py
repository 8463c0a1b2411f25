"""Collectives on three groups of a 2-rank world, as DeepSpeed and
Megatron-style trainers make them: the default group, a new_group() of every
rank (DeepSpeed's data-parallel group), and a group of rank 0 alone.
Run under torchrun --nproc_per_node=2."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
everyone = dist.new_group()            # every rank: shares the default group's sequence
alone = dist.new_group(ranks=[0])      # a subgroup: its own count
t = torch.ones(4)
dist.all_reduce(t)                     # seq 0
dist.all_reduce(t, group=everyone)     # seq 1, group "0,1"
if dist.get_rank() == 0:
    dist.all_reduce(t, group=alone)    # group_seq 0, no seq
dist.broadcast(t, 0, group=everyone)   # seq 2
dist.barrier()                         # seq 3
dist.destroy_process_group()
