"""Paddle's program files beyond the ProgramDesc protobuf: Paddle 3's PIR `.json` (pir_json, with its op table
in pir_ops). Each reader returns an ordinary Program; nothing downstream knows which format it came from."""
