"""Layer names and printed forms, as Trax 1.4.1 prints them.

Every expected string is a literal of what `str(layer)` gives in Trax 1.4.1
for the same expression (checked against a Trax 1.4.1 install); the comment
on each group names the Trax source that builds the layer and its name.
Trax prints with `Layer.__repr__` in trax/layers/base.py: the name, then
`_in{n}` / `_out{n}` where n_in / n_out differ from 1, then the objects in
`sublayers_to_print` (all sublayers when it is None) one per line, indented.
"""

import pytest

import tfnp_trax.layers as tl


def _cond():
  return tl.Fn('c', lambda x: x > 0)


CASES = [
    # trax/layers/rnn.py: LSTM, GRU and SRU are Serials named f'LSTM_{n}'
    # (etc.) with sublayers_to_print=[]; the cells keep their class names.
    ('LSTM', lambda: tl.LSTM(3), 'LSTM_3'),
    ('LSTM_state_out', lambda: tl.LSTM(3, return_state=True), 'LSTM_3_out2'),
    ('LSTM_state_in', lambda: tl.LSTM(3, initial_state=True), 'LSTM_3_in2'),
    ('LSTM_predict_in_out',
     lambda: tl.LSTM(3, mode='predict', return_state=True,
                     initial_state=True), 'LSTM_3_in2_out2'),
    ('LSTMCell', lambda: tl.LSTMCell(3), 'LSTMCell_in2_out2'),
    ('GRU', lambda: tl.GRU(3), 'GRU_3'),
    ('GRUCell', lambda: tl.GRUCell(3), 'GRUCell_in2_out2'),
    ('SRU', lambda: tl.SRU(3), 'SRU_3'),
    ('MakeZeroState', tl.MakeZeroState, 'MakeZeroState'),
    ('LSTM_inside_Serial',
     lambda: tl.Serial(tl.Embedding(10, 4), tl.LSTM(4), tl.Dense(3)),
     'Serial[\n  Embedding_10_4\n  LSTM_4\n  Dense_3\n]'),
    # trax/layers/combinators.py Concatenate: name 'Concatenate' for axis -1,
    # else f'Concatenate_axis{axis}'; n_in is n_items.
    ('Concatenate', tl.Concatenate, 'Concatenate_in2'),
    ('Concatenate_3', lambda: tl.Concatenate(n_items=3), 'Concatenate_in3'),
    ('Concatenate_axis0', lambda: tl.Concatenate(axis=0),
     'Concatenate_axis0_in2'),
    ('Concatenate_axis1_3', lambda: tl.Concatenate(n_items=3, axis=1),
     'Concatenate_axis1_in3'),
    # trax/layers/combinators.py Serial / Parallel / Branch / Residual.
    ('Serial_empty', tl.Serial, 'Serial'),
    ('Serial_named', lambda: tl.Serial(tl.Dense(2), name='Named'),
     'Named[\n  Dense_2\n]'),
    ('Parallel_None', lambda: tl.Parallel(tl.Dense(2), None),
     'Parallel_in2_out2[\n  Dense_2\n  Serial\n]'),
    ('Parallel_empty_list', lambda: tl.Parallel([], tl.Dense(2)),
     'Parallel_in2_out2[\n  Serial\n  Dense_2\n]'),
    # Branch prints its arguments as given (sublayers_to_print=layers).
    ('Branch_None', lambda: tl.Branch(None, tl.Dense(2)),
     'Branch_out2[\n  None\n  Dense_2\n]'),
    ('Branch_empty_list', lambda: tl.Branch([], tl.Dense(2)),
     'Branch_out2[\n  []\n  Dense_2\n]'),
    ('Branch_list', lambda: tl.Branch(tl.Dense(2), [tl.Dense(3), tl.Dense(4)]),
     'Branch_out2[\n  Dense_2\n  [Dense_3, Dense_4]\n]'),
    # Residual is an unnamed Serial(Branch(shortcut, layer), Add()).
    ('Residual', lambda: tl.Residual(tl.Dense(2)),
     'Serial[\n  Branch_out2[\n    None\n    Dense_2\n  ]\n  Add_in2\n]'),
    ('Residual_two', lambda: tl.Residual(tl.Dense(2), tl.Dense(3)),
     'Serial[\n  Branch_out2[\n    None\n    Serial[\n      Dense_2\n'
     '      Dense_3\n    ]\n  ]\n  Add_in2\n]'),
    ('Residual_shortcut',
     lambda: tl.Residual(tl.Dense(2), shortcut=tl.Dense(2)),
     'Serial[\n  Branch_out2[\n    Dense_2\n    Dense_2\n  ]\n  Add_in2\n]'),
    # Select is named f'Select{indices}' without spaces.
    ('Select', lambda: tl.Select([0, 0]), 'Select[0,0]_out2'),
    ('Select_n_in', lambda: tl.Select([1, 0], n_in=3), 'Select[1,0]_in3_out2'),
    ('Select_tuple', lambda: tl.Select((0, 1)), 'Select(0,1)_in2_out2'),
    ('Split', lambda: tl.Split(n_items=3), 'Split_out3'),
    ('Dup', tl.Dup, 'Dup_out2'),
    ('Swap', tl.Swap, 'Swap_in2_out2'),
    ('Drop', tl.Drop, 'Drop_out0'),
    ('Add', tl.Add, 'Add_in2'),
    # Scan keeps its class name; Cond's default false branch is Serial().
    ('Scan', lambda: tl.Scan(tl.Fn('cs', lambda x, c: (x + c, x + c),
                                   n_out=2)),
     'Scan_in2_out2[\n  cs_in2_out2\n]'),
    ('Scan_LSTMCell', lambda: tl.Scan(tl.LSTMCell(3), axis=1),
     'Scan_in2_out2[\n  LSTMCell_in2_out2\n]'),
    ('Scan_no_carry', lambda: tl.Scan(tl.Dense(3), n_carry=0),
     'Scan[\n  Dense_3\n]'),
    ('Cond', lambda: tl.Cond(_cond(), tl.Dense(2)),
     'Cond_in2[\n  c\n  Dense_2\n  Serial\n]'),
    ('Cond_named', lambda: tl.Cond(_cond(), tl.Dense(2), tl.Dense(2),
                                   name='MyCond'),
     'MyCond_in2[\n  c\n  Dense_2\n  Dense_2\n]'),
    # Chunk is an unnamed Serial(ReshapeToChunks, Scan, ReshapeFromChunks).
    ('Chunk', lambda: tl.Chunk(tl.Dense(2), 4),
     'Serial[\n  ReshapeToChunks\n  Scan[\n    Dense_2\n  ]\n'
     '  ReshapeFromChunks\n]'),
    ('Chunk_two_in', lambda: tl.Chunk(tl.Serial(tl.Add(), tl.Dup()), 2),
     'Serial_in2_out2[\n  ReshapeToChunks_in2_out2\n  Scan_in2_out2[\n'
     '    Serial_in2_out2[\n      Add_in2\n      Dup_out2\n    ]\n  ]\n'
     '  ReshapeFromChunks_in2_out2\n]'),
    ('Chunk_zero', lambda: tl.Chunk(tl.Dense(2), 0), 'Dense_2'),
    ('Cache', lambda: tl.Cache(tl.Dense(2)), 'Cache[\n  Dense_2\n]'),
    ('BatchLeadingAxes', lambda: tl.BatchLeadingAxes(tl.Dense(2)),
     'BatchLeadingAxes[\n  Dense_2\n]'),
    # Bidirectional is an unnamed Serial with '_FlipAlongTimeAxis' flips.
    ('Bidirectional', lambda: tl.Bidirectional(tl.GRU(3)),
     'Serial[\n  Branch_out2[\n    GRU_3\n    Serial[\n'
     '      _FlipAlongTimeAxis\n      GRU_3\n      _FlipAlongTimeAxis\n'
     '    ]\n  ]\n  Concatenate_in2\n]'),
    # SerialWithSideOutputs is an unnamed Serial with a Select after each
    # layer moving its side outputs to the bottom of the stack.
    ('SerialWithSideOutputs',
     lambda: tl.SerialWithSideOutputs([tl.Dense(2), tl.Dense(2)]),
     'Serial_in2_out2[\n  Dense_2\n  Select[1,0]_in2_out2\n  Dense_2\n'
     '  Select[1,0]_in2_out2\n]'),
    # trax/layers/base.py Fn: name or 'Fn'; n_in from the positional args.
    ('Fn_unnamed', lambda: tl.Fn('', lambda x: x), 'Fn'),
    ('Fn_no_input', lambda: tl.Fn('Zero', lambda: 0), 'Zero_in0'),
    ('Fn_two_two', lambda: tl.Fn('Two', lambda x, y: (x, y), n_out=2),
     'Two_in2_out2'),
]


@pytest.mark.parametrize('make,want', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_str_and_repr_as_trax_prints_them(make, want):
  layer = make()
  assert str(layer) == want
  assert repr(layer) == want


# -- sublayers_to_print (trax/layers/base.py Layer.__repr__) ----------------
# The list holds the objects to print in place of the sublayers, each shown
# with str(); [] prints none; None prints every sublayer. Items that print
# as '' are left out (Trax's invisible shape-assert layers rely on this).

SUBLAYERS_TO_PRINT = [
    ('empty_list_prints_only_the_name', [], 'Two'),
    ('None_prints_all_sublayers', None, 'Two[\n  Dense_2\n  Dense_3\n]'),
    ('a_layer_list_prints_those_layers', 'second', 'Two[\n  Dense_3\n]'),
    ('any_layer_can_stand_in', 'other', 'Two[\n  Dense_5\n]'),
    # Entries are printed, not looked up: an index prints as the number.
    ('indices_print_as_numbers', [1], 'Two[\n  1\n]'),
    ('index_list', [0, 1], 'Two[\n  0\n  1\n]'),
]


@pytest.mark.parametrize('to_print,want',
                         [c[1:] for c in SUBLAYERS_TO_PRINT],
                         ids=[c[0] for c in SUBLAYERS_TO_PRINT])
def test_sublayers_to_print(to_print, want):
  first, second = tl.Dense(2), tl.Dense(3)
  if to_print == 'second':
    to_print = [second]
  elif to_print == 'other':
    to_print = [tl.Dense(5)]
  layer = tl.Serial(first, second, name='Two', sublayers_to_print=to_print)
  assert str(layer) == want
  # What is printed does not change the layer itself.
  assert layer.sublayers == (first, second)


@pytest.mark.parametrize('make,want', [
    # An unnamed one-in/one-out layer prints as '' and is left out.
    (lambda: tl.Serial(tl.PureLayer(lambda x: x, name=''), tl.Dense(2)),
     'Serial[\n  Dense_2\n]'),
    # With only such sublayers the brackets stay, empty.
    (lambda: tl.Serial(tl.PureLayer(lambda x: x, name='')), 'Serial[\n\n]'),
    # An unnamed layer with several inputs still shows its counts.
    (lambda: tl.Serial(tl.PureLayer(lambda x: x, n_in=2, n_out=2, name=''),
                       tl.Dense(2)),
     'Serial_in2_out2[\n  _in2_out2\n  Dense_2\n]'),
    # An explicit '' name is kept ('' is not None in Layer.__init__).
    (lambda: tl.Serial(tl.Dense(2), name=''), '[\n  Dense_2\n]'),
])
def test_layers_printing_as_empty_are_left_out(make, want):
  assert str(make()) == want


def test_compound_layers_hide_their_inner_layers():
  # trax/layers/rnn.py: sublayers_to_print=[] hides the Serial's inner tree,
  # which is still there to run.
  lstm = tl.LSTM(3)
  assert [str(s) for s in lstm.sublayers] == [
      'Branch_out2[\n  []\n  MakeZeroState\n]',
      'Scan_in2_out2[\n  LSTMCell_in2_out2\n]',
      'Select[0]_in2']
  assert [str(s) for s in tl.GRU(3).sublayers] == [
      'Branch_out2[\n  []\n  MakeZeroState\n]',
      'Scan_in2_out2[\n  GRUCell_in2_out2\n]',
      'Select[0]_in2']
  # Trax's SRU sublayers ('Parallel' of two Sigmoids left out: Trax prints
  # its activations wrapped in shape asserts, which tfnp_trax does not have).
  sru = [str(s) for s in tl.SRU(3).sublayers]
  assert sru[:2] == ['Branch_out2[\n  Dense_9\n  []\n]', 'Split_out3']
  assert sru[3:] == [
      'Fn_in3_out3',
      'Parallel_in3_out4[\n  Serial\n  Serial\n  Branch_out2[\n'
      '    MakeZeroState\n    []\n  ]\n]',
      'Scan_in3_out2[\n  InnerSRUCell_in3_out2\n]',
      'Select[0]_in2',
      'FinalSRUGate_in3']
