"""``sgl_kernel.speculative`` of the stand-in (see ``sgl_kernel.__init__``): the n-gram tree op."""
from sgl_kernel._spec import reconstruct_indices_from_tree_mask

__all__ = ["reconstruct_indices_from_tree_mask"]
