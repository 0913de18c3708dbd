"""One sublayer of each architecture layer type, built at an architecture's sizes and timed by
the serving experiments: `prefill.prefill_layer`, `decode.decode_layer`."""
