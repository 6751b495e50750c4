"""The one leaf-naming scheme (layers/naming.py), against names by hand."""

import numpy as np

from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.layers import naming


def test_names_follow_the_sublayers_and_number_their_leaves():
  model = tl.Serial(tl.Dense(3), tl.Relu(), tl.Serial(tl.Dense(2)))
  model.init(shapes.ShapeDtype((1, 4)))
  assert naming.leaf_names(model) == [
      'Serial/0_Dense_3/0', 'Serial/0_Dense_3/1',
      'Serial/2_Serial/0_Dense_2/0', 'Serial/2_Serial/0_Dense_2/1']


def test_prefix_replaces_the_root_and_odd_characters_become_underscores():
  layer = tl.Dense(2)
  layer.init(shapes.ShapeDtype((1, 3)))
  assert naming.leaf_names(layer, prefix='policy net:1') == [
      'policy_net_1/0', 'policy_net_1/1']


def test_a_tree_not_shaped_like_the_layer_is_numbered():
  layer = tl.Serial(tl.Dense(2), tl.Dense(2))
  layer.init(shapes.ShapeDtype((1, 2)))
  flat = [np.zeros(1)] * 3
  assert naming.leaf_names(layer, flat) == ['Serial/0', 'Serial/1',
                                            'Serial/2']
