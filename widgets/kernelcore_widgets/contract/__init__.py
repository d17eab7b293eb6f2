"""The one source of the debug protocol's commands (commands.py) and what is generated from it and from the
JSON schemas (types.py here; labextension/src/*.generated.ts there): labextension/scripts/gen_contract.py
writes them, tests/test_contract.py fails when a written file is stale."""
