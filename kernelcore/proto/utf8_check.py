"""Is every string field of a serialized ProgramDesc valid UTF-8? Answered by the protobuf parser, in C.

framework.proto is proto2, and proto2 does not check UTF-8 when it parses: upb hands back bytes where a
str is expected, and everything downstream would trip over them. Walking every message of a parsed program
from Python to find such a field cost ~2 s for a 50,000-op program. proto3 does check: this module builds a
proto3 twin of framework.proto (same messages, field numbers and wire types; required fields optional,
enums read as the int32 varints they are on the wire, since proto3 wants every enum to start at 0) and
parses the bytes with it, which rejects a bad string at the speed of a parse.

The twin accepts everything the real schema accepts except bad UTF-8, so a failure here means a bad
string; where it is, the caller finds by walking the (already parsed) program, only then.
"""
from __future__ import annotations

import functools

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from . import framework_pb2

_TWIN_PACKAGE = "kernelcore_utf8_twin"


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


@functools.lru_cache(maxsize=None)
def _twin_class():
    fdp = descriptor_pb2.FileDescriptorProto()
    framework_pb2.DESCRIPTOR.CopyToProto(fdp)
    _proto3_twin(fdp)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_TWIN_PACKAGE}.ProgramDesc"))


def strings_are_utf8(data: bytes) -> bool:
    """True when every string field of the serialized ProgramDesc `data` is valid UTF-8 (`data` is known to
    parse as a ProgramDesc)."""
    try:
        _twin_class()().ParseFromString(data)
    except DecodeError:
        return False
    return True
