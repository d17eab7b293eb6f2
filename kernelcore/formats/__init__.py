"""Paddle's program files: the ProgramDesc protobuf with its parameter streams and inference models
(paddle_files), and Paddle 3's PIR `.json` (pir_json, with its op table in pir_ops). Each reader returns an ordinary
Program; nothing downstream knows which format it came from."""
