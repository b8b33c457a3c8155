#! /usr/bin/env python3

# The module's examples that ./test.py runs (when ns-3 is configured with --enable-examples),
# so that they stay buildable and runnable. Each tuple: (example_name, do_run, do_valgrind_run).
# Small arguments keep each run under a second.
cpp_examples = [
    ("metaroce-incast --senders=4 --bytes=65536", "True", "False"),
    ("metaroce-incast --senders=4 --bytes=65536 --transport=rocev2 --pfc=true", "True", "False"),
    ("metaroce-fat-tree-permutation", "True", "False"),
    ("metaroce-pcap-capture", "True", "False"),
]

# No Python examples.
python_examples = []
