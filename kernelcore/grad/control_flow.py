"""Gradients of the control-flow ops (kernelcore/ops/control_flow.py), with Paddle's grad ops and slots.

  recurrent          -> recurrent_grad, with a grad sub-block
  while              -> while_grad, with a grad sub-block
  conditional_block  -> conditional_block_grad, with a grad sub-block
  select_input       -> select_output    (cond's merge of the two branch results; and the other way round)
  split_lod_tensor   -> merge_lod_tensor (IfElse's split of the rows; and the other way round)
  rnn_memory_helper  -> rnn_memory_helper_grad (old StaticRNN programs' identity copy)

Grad sub-blocks (Paddle's `_append_backward_ops_` on an op with a sub_block). The rule of a recurrent,
while or conditional_block op makes a new block, a kid of the block its grad op goes into, whose
forward_block_idx names the op's sub-block, and fills it by running the same backward machinery (the
same rule table, kernelcore.transforms.backward.append_block_backward) over the sub-block's ops: from the names
whose gradients the grad op supplies at run time (step outputs and states; loop variables after an
iteration; branch outputs) back to the names that need one (step inputs, memories, loop variables before
an iteration, parameters; branch inputs). Gradients computed inside are declared in the grad block, so at
run time they are local to the scope it runs in; the grad op reads them there by Paddle's names
(`<inner name>@GRAD`) and hands them out through its own outputs. A control-flow op nested in a
sub-block gets its grad op in the enclosing grad block and its grad block under that one.

Scopes: the forward op keeps its kid scopes when the executor runs with training=True; the
grad op runs its grad block in each kept scope (so the grad ops read that step's forward values), then
drops it with ctx.drop_scope, newest first, and empties the step-scopes variable (Paddle's
ClearStepScopes). A gradient run after a forward run that kept no scopes is an error that says so, never
silently zero.

Decision: the grad block runs in the kept scope itself, not a kid of it. The scope is dropped right
after, so nothing leaks into a later step, and every scope the run pushes is still a scope_push event
(ExecContext.new_scope makes kids of the op's own scope only).

Known difference from Paddle 2.6.2: its append_backward builds the step grad block of a recurrent op only
from the ops on the path to the step *outputs*, so when a state is a separate copy of the hidden value
(assign / rnn_memory_helper, as StaticRNN and Paddle's own block-API programs write) the memory gradient
is lost and Paddle's gradients are wrong (measured: errors of 0.03-0.1 against finite differences, T=4;
tests/paddle_oracle/make_control_flow_grad.py prints them). Here the states are targets of the grad block
too, so the gradient carried from step t to t-1 is complete. Programs Paddle wrote, with Paddle's
recurrent_grad / while_grad / conditional_block_grad ops, run here with Paddle's runtime semantics and
give Paddle's numbers; for cond and while_loop kernelcore writes Paddle's grad ops op for op.

Limits: `while` shares Paddle's aliasing model. A loop variable is written back under its own name, so
the iteration scope holds the value the iteration began with (the forward op binds it there), and a
grad op reading a loop variable sees that value, also for a forward op that read the variable after the
body had reassigned it in the same iteration. Gradients through tensor arrays are not supported.
"""
from __future__ import annotations

from ..errors import ProgramError
from ..ops.control_flow import ControlFlowError, truth
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op
from ..transforms.backward import (EMPTY_VAR, GRAD_SUFFIX, GradContext, append_block_backward, grad_name, is_float,
                                   rule, standard)

_SKIP_EAGER = Attr("skip_eager_deletion_vars", A.STRINGS, "Paddle's garbage-collector hint; ignored", [])


# ---------------------------------------------------------------------------------------------------------
# helpers
def _grad_sub_block(g: GradContext, fwd_block):
    """A new block for the grad ops of `fwd_block`: a kid of the block the grad op goes into, with
    forward_block_idx = fwd_block (Paddle: program._create_block() + _set_forward_block_idx). The program's
    current block is left as it was."""
    prog = fwd_block.program
    with prog.block_guard(prog.current_block()):  # create_block makes the new block current; undo that
        blk = prog.create_block(g.grad_block.idx)
    blk.desc.forward_block_idx = fwd_block.idx
    return blk


def _local(scope, name: str):
    """The value of `name` if `scope` itself holds it (not a parent), else None."""
    v = scope.find_var(name)
    return v.value if v is not None and v.scope_id == scope.id else None


def _value_in(scope, name: str, what: str):
    v = scope.find_var(name)
    if v is None or v.value is None:
        raise ControlFlowError(f"{what} {name!r} holds no value in the kept scope")
    return v.value


def _infer_like_inputs(pairs):
    """Each output slot `S@GRAD` shaped like input slot `S`, entry by entry."""
    def infer(ic):
        for out_slot, in_slot in pairs:
            if not ic.has_input(in_slot):
                continue
            for i in range(min(len(ic.output_names(out_slot)), len(ic.input_names(in_slot)))):
                ic.set_output(out_slot, ic.shape(in_slot, i), ic.dtype(in_slot, i), i)
    return infer


def _wanted(ctx, slot: str, n: int) -> list[bool]:
    """Per position of a gradient output slot: whether a variable is named for it (an absent slot: none)."""
    names = ctx.output_names(slot)
    return [k < len(names) and names[k] != EMPTY_VAR for k in range(n)]


def _clear(ctx, slot: str) -> None:
    """Empty the step-scopes variable the grad op read (Paddle's ClearStepScopes): its scopes are dropped.
    The variable gets a new list; the old one (a trace may hold it) is left as it was."""
    var = ctx.scope.find_var(ctx.input_names(slot)[0])
    if var is not None:
        var.value = []


# ---------------------------------------------------------------------------------------------------------
# recurrent
RECURRENT_GRAD = register_op(
    "recurrent_grad",
    "The gradient of recurrent: runs the grad sub-block once per kept step scope, newest first (from the "
    "last timestep to the first; the other way round when the forward ran with reverse), each time in that "
    "step's scope, so the grad ops read the step's forward values. Before each step it binds the step's "
    "slice outputs@GRAD[t] under `<output>@GRAD` and the memory gradient under `<state>@GRAD` (the "
    "`<ex_state>@GRAD` the step after it computed; zeros at the last step); after it, `<input>@GRAD` goes "
    "into inputs@GRAD[t], `<parameter>@GRAD` is added into parameters@GRAD, and the step scope is dropped. "
    "initial_states@GRAD is the first step's `<ex_state>@GRAD`.",
    inputs=[In("inputs", "forward input: the sequences, time-major [T, ...]", duplicable=True),
            In("initial_states", "forward input: the initial states", duplicable=True, dispensable=True),
            In("parameters", "forward input: outer variables the step block reads", duplicable=True,
               dispensable=True),
            In("outputs", "forward output: the stacked step outputs", duplicable=True),
            In("outputs@GRAD", "the gradients of outputs, [T, ...] each", duplicable=True),
            In("step_scopes", "forward output: the step scopes the forward run kept"),
            In("step_scopes@GRAD", "Paddle's maker names step_scopes here again; not read", dispensable=True)],
    outputs=[Out("inputs@GRAD", "the gradients of inputs", duplicable=True, dispensable=True),
             Out("initial_states@GRAD", "the gradients of initial_states", duplicable=True, dispensable=True),
             Out("parameters@GRAD", "the gradients of parameters, summed over the timesteps", duplicable=True,
                 dispensable=True)],
    attrs=[Attr("sub_block", A.BLOCK, "the grad sub-block (its forward_block_idx: the step block)"),
           Attr("ex_states", A.STRINGS, "names, inside the step block, of the previous step's states", []),
           Attr("states", A.STRINGS, "names, inside the step block, of this step's states", []),
           Attr("has_states", A.BOOLEAN, "whether the op carries states", False),
           Attr("reverse", A.BOOLEAN, "the forward ran from the last timestep to the first", False),
           Attr("is_train", A.BOOLEAN, "copied from the forward op", True),
           _SKIP_EAGER],
    infer_shape=_infer_like_inputs([("inputs@GRAD", "inputs"), ("initial_states@GRAD", "initial_states"),
                                    ("parameters@GRAD", "parameters")]))


@rule("recurrent")
def recurrent_grad_rule(g: GradContext):
    """Paddle's RecurrentGradOpMaker: every forward input and output (step_scopes twice, as
    step_scopes@GRAD too), the outputs' gradients, the wanted input gradients (@EMPTY@ in the other
    positions) and the forward attributes with sub_block = the grad sub-block."""
    op = g.op
    in_g = g.input_grad("inputs", drop_empty=False)
    init_g = g.input_grad("initial_states", drop_empty=False)
    param_g = g.input_grad("parameters", drop_empty=False)
    if not any(n != EMPTY_VAR for n in in_g + init_g + param_g):
        return []
    if op.attr("is_train") is False:
        raise ProgramError(f"recurrent op (block {op.block.idx}, op #{op.idx}) has is_train=false: it never keeps "
                           f"its step scopes, so it cannot be differentiated (set is_train=true)")
    step = op.block.program.block(op.attr("sub_block"))
    ex_states, states = list(op.attr("ex_states") or []), list(op.attr("states") or [])

    def differentiable(name):
        v = step.find_var_recursive(name)
        return v is not None and is_float(v.dtype)

    # Inside the step block a sequence and a parameter keep their outer names (Paddle's convention).
    sources = {n for n in op.input("inputs") if g.needs_grad(n)}
    sources |= {n for n in op.input("parameters") if g.needs_grad(n)}
    # Memories always: the gradient reaching a state at step t flows on to the steps before it.
    sources |= {n for n in ex_states if differentiable(n)}
    targets = list(dict.fromkeys(op.output("outputs") + states))
    grad_block = _grad_sub_block(g, step)
    append_block_backward(step, grad_block, targets, [grad_name(n) for n in targets], sources, given_local=True)

    ss = op.output("step_scopes")
    inputs = {"inputs": op.input("inputs"), "outputs": op.output("outputs"),
              "outputs@GRAD": g.output_grad("outputs"), "step_scopes": ss, "step_scopes@GRAD": ss}
    if op.input("initial_states"):
        inputs["initial_states"] = op.input("initial_states")
    if op.input("parameters"):
        inputs["parameters"] = op.input("parameters")
    outputs = {k: v for k, v in (("inputs@GRAD", in_g), ("initial_states@GRAD", init_g),
                                  ("parameters@GRAD", param_g)) if v}
    return [g.grad_op("recurrent_grad", inputs, outputs, {"sub_block": grad_block.idx}, copy_attrs=True)]


@RECURRENT_GRAD.kernel()
def recurrent_grad(ctx, ins, attrs):
    seqs, _inits, params, _outs, out_grads, scopes, _ = ins
    xp = ctx.xp
    in_names = ctx.input_names("inputs")
    param_names = ctx.input_names("parameters")
    out_names = ctx.input_names("outputs")
    ex_states, states = attrs["ex_states"], attrs["states"]
    want_in = _wanted(ctx, "inputs@GRAD", len(in_names))
    want_init = _wanted(ctx, "initial_states@GRAD", len(ctx.input_names("initial_states")))
    want_param = _wanted(ctx, "parameters@GRAD", len(param_names))
    T = int(seqs[0].shape[0])
    scopes = list(scopes or [])
    ss_name = ctx.input_names("step_scopes")[0]
    if not scopes:
        raise ControlFlowError(
            f"step_scopes {ss_name!r} holds no step scopes: the forward recurrent op keeps them only when the "
            f"executor runs with training=True (and is_train is true), and a gradient op drops them once used")
    if len(scopes) != T or any(s.dropped for s in scopes):
        raise ControlFlowError(
            f"step_scopes {ss_name!r} holds {len(scopes)} scopes ({sum(s.dropped for s in scopes)} already "
            f"dropped) for {T} timesteps: the forward op must run (with training=True) before each gradient run")
    for name, g in zip(out_names, out_grads):
        if g is None or g.shape[:1] != (T,):
            raise ControlFlowError(f"the gradient of output {name!r} must be [T={T}, ...], got "
                                   f"{'no value' if g is None else list(g.shape)}")
    block = attrs["sub_block"]
    in_g = [xp.zeros_like(x) if w else None for x, w in zip(seqs, want_in)]
    param_g = [None] * len(param_names)
    carry = None  # the memory gradient: <ex_state>@GRAD of the step processed last
    reverse = attrs["reverse"]
    n = len(scopes)
    for k in range(n - 1, -1, -1):  # newest first
        s = scopes[k]
        t = s.origin.get("timestep")
        if t is None:
            t = n - 1 - k if reverse else k
        ctx.step_event("step_begin", t, s)
        given = {}
        for name, g in zip(out_names, out_grads):
            given[name] = g[t]  # a view: kernels never mutate their inputs
        for i, name in enumerate(states):
            if carry is not None:  # a state that is also an output gets both gradients
                given[name] = carry[i] if name not in given else given[name] + carry[i]
            elif name not in given:
                given[name] = xp.zeros_like(_value_in(s, name, "state"))
        for name, value in given.items():
            ctx.bind_var(s, grad_name(name), value)
        yield from ctx.run_block(block, s, timestep=t)
        for i, name in enumerate(in_names):
            if in_g[i] is not None:
                v = _local(s, grad_name(name))
                if v is not None:
                    in_g[i][t] = v
        for i, name in enumerate(param_names):
            if want_param[i]:
                v = _local(s, grad_name(name))
                if v is not None:
                    param_g[i] = v if param_g[i] is None else param_g[i] + v
        carry = []
        for name in ex_states:
            v = _local(s, grad_name(name))
            carry.append(v if v is not None else xp.zeros_like(_value_in(s, name, "ex_state")))
        ctx.step_event("step_end", t, s)
        ctx.drop_scope(s)  # the gradient op frees the step scopes, newest first
    _clear(ctx, "step_scopes")
    param_g = [(v if v is not None else xp.zeros_like(p)) if w else None
               for v, p, w in zip(param_g, params or [], want_param)]
    init_g = [c if w else None for c, w in zip(carry or [], want_init)]
    return (in_g, init_g, param_g)


# ---------------------------------------------------------------------------------------------------------
# conditional_block
CONDITIONAL_BLOCK_GRAD = register_op(
    "conditional_block_grad",
    "The gradient of conditional_block: when the branch ran (the same test as the forward op), runs the grad "
    "sub-block in the branch scope the forward run kept (the grad ops read the branch's values there and "
    "Out@GRAD from outside), hands each `<Input>@GRAD` it computed out through Input@GRAD, and drops the "
    "scope; when the branch did not run, every Input@GRAD is zeros.",
    inputs=[In("Cond", "forward input: the condition", duplicable=True),
            In("Input", "forward input: outer variables the branch reads", duplicable=True, dispensable=True),
            In("Out", "forward output: outer variables the branch writes", duplicable=True, dispensable=True),
            In("Out@GRAD", "the gradients of Out", duplicable=True, dispensable=True),
            In("Scope", "forward output: the branch scope the forward run kept")],
    outputs=[Out("Input@GRAD", "the gradients of Input", duplicable=True, dispensable=True)],
    attrs=[Attr("sub_block", A.BLOCK, "the grad sub-block (its forward_block_idx: the branch block)"),
           Attr("is_scalar_condition", A.BOOLEAN, "whether Cond is one bool scalar", False),
           _SKIP_EAGER],
    infer_shape=_infer_like_inputs([("Input@GRAD", "Input")]))


@rule("conditional_block")
def conditional_block_grad_rule(g: GradContext):
    """Paddle's ConditionalBlockGradMaker: Cond, Input, Out, Out@GRAD, Scope -> Input@GRAD (@EMPTY@ where
    no gradient is wanted), attributes sub_block (the grad sub-block) and is_scalar_condition."""
    op = g.op
    in_g = g.input_grad("Input", drop_empty=False)
    outs = op.output("Out")
    if not any(n != EMPTY_VAR for n in in_g) or not outs:
        return []
    branch = op.block.program.block(op.attr("sub_block"))
    sources = {n for n in op.input("Input") if g.needs_grad(n)}
    grad_block = _grad_sub_block(g, branch)
    append_block_backward(branch, grad_block, outs, [grad_name(n) for n in outs], sources, given_local=False)
    inputs = {"Cond": op.input("Cond"), "Input": op.input("Input"), "Out": outs,
              "Out@GRAD": g.output_grad("Out"), "Scope": op.output("Scope")}
    return [g.grad_op("conditional_block_grad", inputs, {"Input@GRAD": in_g},
                      {"sub_block": grad_block.idx, "is_scalar_condition": bool(op.attr("is_scalar_condition"))})]


@CONDITIONAL_BLOCK_GRAD.kernel()
def conditional_block_grad(ctx, ins, attrs):
    conds, inputs, _outs, _out_grads, scopes = ins
    xp = ctx.xp
    inputs = inputs or []
    in_names = ctx.input_names("Input")
    want = _wanted(ctx, "Input@GRAD", len(in_names))
    if attrs["is_scalar_condition"]:
        ran = truth(ctx, conds[0], f"Cond {ctx.input_names('Cond')[0]!r}")
    else:
        ran = all(x is not None and getattr(x, "size", 1) != 0 for x in inputs)
    kept = [s for s in (scopes or []) if not s.dropped]
    grads = [None] * len(in_names)
    if ran:
        if not kept:
            raise ControlFlowError(
                f"the branch ran but Scope {ctx.input_names('Scope')[0]!r} holds no kept scope: the forward "
                f"conditional_block keeps it only when the executor runs with training=True, and a gradient "
                f"op drops it once used")
        s = kept[0]
        yield from ctx.run_block(attrs["sub_block"], s)
        grads = [_local(s, grad_name(n)) if w else None for n, w in zip(in_names, want)]
        ctx.drop_scope(s)
        _clear(ctx, "Scope")
    out = []
    for x, g, w in zip(inputs, grads, want):
        if not w or x is None:
            out.append(None)
        else:
            out.append(g if g is not None else xp.zeros_like(x))
    return (out,)


# ---------------------------------------------------------------------------------------------------------
# while
WHILE_GRAD = register_op(
    "while_grad",
    "The gradient of while: runs the grad sub-block once per kept iteration scope, the last iteration "
    "first, each time in that iteration's scope (where the loop variables hold the values the iteration "
    "began with). Before each iteration it binds Out@GRAD under its own names: the gradient of each loop "
    "variable's value after the iteration (from outside for the last one; afterwards the `<X>@GRAD` the "
    "iteration after it computed, zeros if it computed none). After it, the `<X>@GRAD` of every other X "
    "with a gradient (parameters, outer inputs) is added into X@GRAD. A loop variable's X@GRAD names its "
    "Out@GRAD variable itself (the gradient of its value before the loop).",
    inputs=[In("X", "forward input: outer variables the body reads", duplicable=True, dispensable=True),
            In("Out", "forward output: outer variables the body writes", duplicable=True, dispensable=True),
            In("Out@GRAD", "the gradients of the differentiated Out variables (after the loop)", duplicable=True,
               dispensable=True),
            In("StepScopes", "forward output: the iteration scopes the forward run kept")],
    outputs=[Out("X@GRAD", "the gradients of X", duplicable=True, dispensable=True)],
    attrs=[Attr("sub_block", A.BLOCK, "the grad sub-block (its forward_block_idx: the loop body)"),
           Attr("is_test", A.BOOLEAN, "copied from the forward op", False),
           Attr("original_output_grad", A.STRINGS, "Out@GRAD's names as the rule wrote them", []),
           _SKIP_EAGER],
    infer_shape=_infer_like_inputs([("X@GRAD", "X")]))


@rule("while")
def while_grad_rule(g: GradContext):
    """Paddle's WhileGradOpMaker: X, Out, StepScopes, Out@GRAD (the output gradients the grad block reads)
    -> X@GRAD (@EMPTY@ for an X that needs none or whose gradient the grad block does not compute);
    attributes copied, sub_block = the grad sub-block, original_output_grad = Out@GRAD's names."""
    op = g.op
    xs, outs = op.input("X"), op.output("Out")
    body = op.block.program.block(op.attr("sub_block"))

    def differentiable(name):
        v = body.find_var_recursive(name)
        return v is not None and v.type in (VT.LOD_TENSOR, VT.SELECTED_ROWS) and is_float(v.dtype)

    targets = [o for o in outs if g.needs_grad(o) and differentiable(o)]
    if not targets or not any(g.needs_grad(x) for x in xs):
        return []
    if op.attr("is_test"):
        raise ProgramError(f"while op (block {op.block.idx}, op #{op.idx}) has is_test=true: it never keeps its "
                           f"iteration scopes, so it cannot be differentiated (set is_test=false)")
    # Loop variables always: the gradient of one iteration's input flows on to the iteration before it.
    sources = {x for x in xs if differentiable(x) and (g.needs_grad(x) or x in outs)}
    prog = body.program
    nblocks = prog.num_blocks
    grad_block = _grad_sub_block(g, body)
    given = [grad_name(o) for o in targets]
    produced = append_block_backward(body, grad_block, targets, given, sources, given_local=True)
    xg = [grad_name(x) if g.needs_grad(x) and grad_name(x) in produced else EMPTY_VAR for x in xs]
    if all(n == EMPTY_VAR for n in xg):
        del prog.desc.blocks[nblocks:]  # nothing to hand out: no grad op, no grad block
        prog.touch()
        return []
    read = {n for o in grad_block.ops for n in o.input_arg_names}
    og = [n for n in given if n in read]
    inputs = {"X": xs, "Out": outs, "Out@GRAD": og, "StepScopes": op.output("StepScopes")}
    return [g.grad_op("while_grad", inputs, {"X@GRAD": xg},
                      {"sub_block": grad_block.idx, "original_output_grad": og, "skip_eager_deletion_vars": []},
                      copy_attrs=True)]


@WHILE_GRAD.kernel()
def while_grad(ctx, ins, attrs):
    xs, _outs, ogs, scopes = ins
    xp = ctx.xp
    xs, ogs = xs or [], ogs or []
    x_names, og_names = ctx.input_names("X"), ctx.input_names("Out@GRAD")
    want = _wanted(ctx, "X@GRAD", len(x_names))
    scopes = list(scopes or [])
    if attrs["is_test"] or not ctx.training:
        raise ControlFlowError("while_grad reads the iteration scopes of the forward run, which the while op keeps "
                               "only when the executor runs with training=True and is_test is false")
    if any(s.dropped for s in scopes):
        raise ControlFlowError("the iteration scopes were dropped already: run the while op (with "
                               "training=True) before each gradient run")
    for n, v in zip(og_names, ogs):
        if v is None:
            raise ControlFlowError(f"the output gradient {n!r} holds no value")
    block = attrs["sub_block"]
    written = {n for op in ctx.program.block(block).ops for n in op.output_arg_names}
    og_of = {n[:n.find(GRAD_SUFFIX)]: n for n in og_names if GRAD_SUFFIX in n}  # loop variable -> its output gradient
    current = dict(zip(og_names, ogs))
    acc = [None] * len(x_names)
    for k in range(len(scopes) - 1, -1, -1):  # the last iteration first
        s = scopes[k]
        t = s.origin.get("timestep", k)
        ctx.step_event("step_begin", t, s)
        for n in og_names:
            ctx.bind_var(s, n, current[n])
        yield from ctx.run_block(block, s, timestep=t)
        for i, x in enumerate(x_names):
            gname = grad_name(x)
            v = _local(s, gname) if gname in written else None
            if x in og_of:  # before this iteration = after the one before it
                on = og_of[x]
                current[on] = v if v is not None else xp.zeros_like(current[on])
            elif want[i] and v is not None:
                acc[i] = v if acc[i] is None else acc[i] + v
        ctx.step_event("step_end", t, s)
        ctx.drop_scope(s)
    _clear(ctx, "StepScopes")
    out = []
    for i, x in enumerate(x_names):
        if not want[i]:
            out.append(None)
        elif x in og_of:
            out.append(current[og_of[x]])
        else:
            out.append(acc[i] if acc[i] is not None else xp.zeros_like(xs[i]))
    return (out,)


# ---------------------------------------------------------------------------------------------------------
# select_input -> select_output
SELECT_OUTPUT = register_op(
    "select_output",
    "Out[Mask] = X: Mask is an int32 tensor with one element; the other entries of Out are not written "
    "(the gradient of select_input: only the branch that ran gets one).",
    inputs=[In("X", "the value to route"), In("Mask", "int32, one element: the index into Out")],
    outputs=[Out("Out", "the candidates; only Out[Mask] is written", duplicable=True)],
    infer_shape=lambda ic: [ic.set_output("Out", ic.shape("X"), ic.dtype("X"), i)
                            for i in range(len(ic.output_names("Out")))])

@SELECT_OUTPUT.kernel()
def select_output(ctx, ins, attrs):
    x, mask = ins
    if mask is None or getattr(mask, "size", 1) != 1:
        raise ControlFlowError(f"Mask must hold one integer, got "
                               f"{'no value' if mask is None else f'shape {list(mask.shape)}'}")
    k = int(mask.reshape(-1)[0]) if hasattr(mask, "reshape") else int(mask)
    names = ctx.output_names("Out")
    if not 0 <= k < len(names):
        raise ControlFlowError(f"Mask is {k} but Out has {len(names)} entries")
    out = [None] * len(names)
    if names[k] != EMPTY_VAR:
        out[k] = x  # a reference: nothing mutates it
    return (out,)


@rule("select_input")
def select_input_grad_rule(g: GradContext):
    """Paddle's SelectInputGradMaker: X@GRAD = select_output(Out@GRAD, Mask)."""
    xg = g.input_grad("X", drop_empty=False)
    if not xg:
        return []
    return [g.grad_op("select_output", {"X": g.output_grad("Out"), "Mask": g.input("Mask")}, {"Out": xg})]


@rule("select_output")
def select_output_grad_rule(g: GradContext):
    """Paddle's SelectOutputGradMaker: X@GRAD = select_input(Out@GRAD, Mask)."""
    xg = g.input_grad("X")
    if not xg:
        return []
    return [g.grad_op("select_input", {"X": g.output_grad("Out"), "Mask": g.input("Mask")}, {"Out": xg})]


# ---------------------------------------------------------------------------------------------------------
# IfElse's split and merge: each is the other's gradient
def _grad_or_empty(g: GradContext, slot: str) -> list[str]:
    """The gradient name of a one-variable input slot, or @EMPTY@ when it needs none (the grad op's slot
    is required, so it cannot be left empty)."""
    return [grad_name(n) if g.needs_grad(n) else EMPTY_VAR for n in g.input(slot)]


@rule("split_lod_tensor")
def split_lod_tensor_grad_rule(g: GradContext):
    """Paddle's SplitLoDTensorArrayGradMaker: X@GRAD = merge_lod_tensor(InTrue=OutTrue@GRAD,
    InFalse=OutFalse@GRAD, Mask, X)."""
    xg = g.input_grad("X")
    if not xg:
        return []
    return [g.grad_op("merge_lod_tensor", {"X": g.input("X"), "Mask": g.input("Mask"),
                                           "InTrue": g.output_grad("OutTrue"), "InFalse": g.output_grad("OutFalse")},
                      {"Out": xg}, copy_attrs=True)]


@rule("merge_lod_tensor")
def merge_lod_tensor_grad_rule(g: GradContext):
    """Paddle's MergeLoDTensorGradMaker: InTrue@GRAD, InFalse@GRAD = split_lod_tensor(Out@GRAD, Mask)."""
    t, f = _grad_or_empty(g, "InTrue"), _grad_or_empty(g, "InFalse")
    if all(n == EMPTY_VAR for n in t + f):
        return []
    return [g.grad_op("split_lod_tensor", {"X": g.output_grad("Out"), "Mask": g.input("Mask")},
                      {"OutTrue": t, "OutFalse": f}, copy_attrs=True)]


# ---------------------------------------------------------------------------------------------------------
# rnn_memory_helper (an identity copy)
RNN_MEMORY_HELPER_GRAD = standard(
    "rnn_memory_helper", ins=("X",), outs=("Out",),
    comment="X@GRAD = Out@GRAD (zeros shaped like X when Out@GRAD holds no value), Paddle's "
            "rnn_memory_helper_grad.")


@RNN_MEMORY_HELPER_GRAD.kernel()
def rnn_memory_helper_grad(ctx, ins, attrs):
    x, _out, g = ins
    return (g if g is not None else ctx.xp.zeros_like(x),)


__all__ = ["RECURRENT_GRAD", "CONDITIONAL_BLOCK_GRAD", "RNN_MEMORY_HELPER_GRAD"]
