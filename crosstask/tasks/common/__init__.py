"""The task layer every benchmark shares: readers, schema, layout, sources, factory.

  readers   TSV / JSON / JSON-lines / SQuAD readers whose errors name file and line
  schema    a benchmark's fields: labels per language, list separators, label sets, metrics
  layout    arrow prompts, multi-field layout and lenient parsing (the one implementation)
  sources   records -> a SeqIO source (from_tensor_slices, so iterators checkpoint)
  plain     an arrow task without SeqIO: its examples' text, postprocessor and metrics
  factory   `arrow_task`: a `plain.arrow` task + tokenizing -> a registered seqio.Task;
            `register_for_vocabulary`: the same tasks for another vocabulary
  rank      rank classification: (question, option) examples, their postprocessor and metric
  label_sets  label sets several benchmarks share (the 67 disciplines of CSL and CSLDCP)
  prompts   prompt variants `<task>.p<k>`: names, and mean/spread over prompts
  sampling  seeded episodes and k-shot sets (numpy on indices)
  span_corruption  T5's span corruption in numpy, for streams made outside tf.data
  report    markdown tables beside a paper's numbers, and curves
  testing   assertions every benchmark's tests call (like seqio.test_utils)

`readers`, `schema`, `layout`, `plain`, `rank`, `label_sets`, `sampling`, `prompts` and
`report` import no TensorFlow or SeqIO.
"""
