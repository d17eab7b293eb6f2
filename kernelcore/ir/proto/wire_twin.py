"""A second parse of a serialized ProgramDesc, in C, that checks its strings and reads its slots flat.

framework.proto is proto2, and proto2 does not check UTF-8 when it parses: upb hands back bytes where a
str is expected, and everything downstream would trip over them. Walking every message of a parsed program
from Python to find such a field costs as much as the parse many times over. proto3 does check: this module builds a
proto3 twin of framework.proto (same messages, field numbers and wire types; required fields optional,
enums read as the int32 varints they are on the wire, since proto3 wants every enum to start at 0) and
parses the bytes with it, which rejects a bad string at the speed of a parse.

The twin differs in one more place, to be cheap to read: OpDesc's `inputs`, `outputs` and `attrs` are
declared as one (singular) message whose fields are all repeated. The wire is the same; protobuf merges
repeated occurrences of a singular message field, so `op.inputs.arguments` is every input name of the op
in slot order, `op.inputs.parameter` every slot name and `op.attrs.type` every attribute's type, each one
call, where the real schema costs a wrapper per slot or attribute (kernelcore/ir/op_reads.py reads a big
program's outline from it, and structure.check_structure which of its ops carry block attributes). Which
names sit in which slot, and which value belongs to which attribute, is not kept; that is read from the
real desc where it matters.

The twin accepts everything the real schema accepts except bad UTF-8, so a failure here means a bad
string; where it is, the caller finds by walking the (already parsed) program, only then.
"""
from __future__ import annotations

import functools

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from . import framework_pb2

_TWIN_PACKAGE = "kernelcore_wire_twin"


def _proto3_twin(fdp: descriptor_pb2.FileDescriptorProto) -> None:
    real = "." + fdp.package + "."
    fdp.name = f"{_TWIN_PACKAGE}/{fdp.name}"
    fdp.package = _TWIN_PACKAGE
    fdp.syntax = "proto3"
    del fdp.enum_type[:]
    todo = list(fdp.message_type)
    while todo:
        m = todo.pop()
        del m.enum_type[:]
        todo.extend(m.nested_type)
        for f in m.field:
            if f.label == f.LABEL_REQUIRED:
                f.label = f.LABEL_OPTIONAL
            f.ClearField("default_value")
            if f.type == f.TYPE_ENUM:
                f.type = f.TYPE_INT32
                f.ClearField("type_name")
            elif f.type_name.startswith(real):
                f.type_name = f".{_TWIN_PACKAGE}.{f.type_name[len(real):]}"


def _flat_slots(fdp: descriptor_pb2.FileDescriptorProto) -> None:
    """OpDesc.inputs / .outputs: one merged VarFlat (repeated parameter, repeated arguments) per op;
    OpDesc.attrs: one merged AttrFlat (every field repeated: `op.attrs.type` lists the op's attribute
    types). A repeated numeric field accepts the unpacked values on the wire as well as packed ones, and a
    string field is never packed: the wire is the same."""
    op = next(m for m in fdp.message_type if m.name == "OpDesc")
    for real, flat_name, fields in (("Var", "VarFlat", ("inputs", "outputs")), ("Attr", "AttrFlat", ("attrs",))):
        src = next(m for m in op.nested_type if m.name == real)
        flat = op.nested_type.add()
        flat.CopyFrom(src)
        flat.name = flat_name
        for f in flat.field:
            f.label = f.LABEL_REPEATED
        for f in op.field:
            if f.name in fields:
                f.label = f.LABEL_OPTIONAL
                f.type_name = f".{_TWIN_PACKAGE}.OpDesc.{flat_name}"


@functools.lru_cache(maxsize=None)
def _twin_class():
    fdp = descriptor_pb2.FileDescriptorProto()
    framework_pb2.DESCRIPTOR.CopyToProto(fdp)
    _proto3_twin(fdp)
    _flat_slots(fdp)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_TWIN_PACKAGE}.ProgramDesc"))


def parse_checked(data: bytes):
    """The twin of the serialized ProgramDesc `data` (known to parse as one), or None when a string field
    is not valid UTF-8."""
    twin = _twin_class()()
    try:
        twin.ParseFromString(data)
    except DecodeError:
        return None
    return twin
