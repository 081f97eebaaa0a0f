"""A node's options model as declared ROS parameters (what ``ros2 param list / describe / set`` see).

Every field of the model becomes a parameter with a descriptor: its type (from the annotation),
a description, and ``read_only`` unless the field is in the model's ``live`` set. Nested dict
fields (``sim``, ``stage``, ...) become one read-only parameter per dotted key given at start-up
(``sim.seed``). Parameters given at start-up (a profile's ``parameters``, ``--params-file``) are
validated by the model first, so a bad value stops the node with a message naming it.

A change through the parameter service (``rcl_interfaces/srv/SetParameters``, what ``ros2 param
set`` calls) is refused by rclpy for read-only parameters ("Trying to set a read-only parameter")
and wrong types; a live one is validated by the model (:func:`rgbt.graph.options.changed_options`)
and applied by the node's ``apply_options`` hook, or refused with the reason.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.parameter import Parameter

from rgbt.graph.options import NodeOptions, flatten

_SCALAR = {bool: Parameter.Type.BOOL, int: Parameter.Type.INTEGER, float: Parameter.Type.DOUBLE,
           str: Parameter.Type.STRING}
_ARRAY = {bool: Parameter.Type.BOOL_ARRAY, int: Parameter.Type.INTEGER_ARRAY, float: Parameter.Type.DOUBLE_ARRAY,
          str: Parameter.Type.STRING_ARRAY}


def parameter_type(annotation: Any) -> Parameter.Type | None:
    """The ROS parameter type of an options field's annotation (None: a dict, declared per key)."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return _SCALAR[type(typing.get_args(annotation)[0])]
    if origin in (list, tuple):
        item = typing.get_args(annotation)[0]
        if typing.get_origin(item) is Literal:  # e.g. list[Literal["thermal", ...]]: a string array
            item = type(typing.get_args(item)[0])
        return _ARRAY[item]
    if origin is dict or annotation is dict:
        return None
    if origin in (typing.Union, types.UnionType):  # e.g. float | None: the first concrete type
        return parameter_type(next(a for a in typing.get_args(annotation) if a is not type(None)))
    return _SCALAR[annotation]


def describe(model: type[NodeOptions], name: str, live: bool) -> str:
    """One line for ``ros2 param describe``: the model, the field's default and whether it is live."""
    field = model.model_fields.get(name.split(".")[0])
    text = f"{model.__name__}.{name}"
    if field is not None and field.description:
        text += f": {field.description}"
    if field is not None and not field.is_required() and "." not in name:
        text += f" (default {field.get_default(call_default_factory=True)!r})"
    return text + ("; live: takes effect at once" if live else "; read-only: restart the node to change it")


def declare_options(node: Any, options: NodeOptions) -> set[str]:
    """Declare every field of ``options`` on ``node`` with its validated value; returns the names."""
    model = type(options)
    declared: set[str] = set()
    for name, field in model.model_fields.items():
        value = getattr(options, name)
        kind = parameter_type(field.annotation)
        if kind is None:  # nested options: one read-only parameter per key given at start-up
            for key, v in flatten(value, name + ".").items():
                node.declare_parameter(key, v, ParameterDescriptor(description=describe(model, key, False),
                                                                   read_only=True), ignore_override=True)
                declared.add(key)
            continue
        live = name in options.live
        descriptor = ParameterDescriptor(description=describe(model, name, live), read_only=not live)
        if kind in _ARRAY.values():
            value = list(value)
        # an empty list has no type of its own: declared by type (``ros2 param get``: "not set" = empty)
        node.declare_parameter(name, kind if value == [] else value, descriptor, ignore_override=True)
        declared.add(name)
    return declared
