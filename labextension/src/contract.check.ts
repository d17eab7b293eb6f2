/**
 * The views' types (schema.ts) must accept every value the contract (kernelcore/contract.schema.json,
 * generated into contract.generated.ts) allows Python to send: this file does not compile when they drift.
 */
import type * as Wire from './contract.generated';
import type * as Views from './schema';

/** Compiles only when every `W` is a `V`. */
type Accepts<V, W extends V> = W;

export type ContractChecks = [
  Accepts<Views.ProgramJSON, Wire.ProgramJSON>,
  Accepts<Views.BlockJSON, Wire.BlockJSON>,
  Accepts<Views.OpJSON, Wire.OpJSON>,
  Accepts<Views.VarJSON, Wire.VarJSON>,
  Accepts<Views.PrunedJSON, Wire.PrunedJSON>,
  Accepts<Views.GroupJSON, Wire.GroupJSON>,
  Accepts<Views.TraceJSON, Wire.TraceJSON>,
  Accepts<Views.TraceEvent, Wire.TraceEvent>,
  Accepts<Views.EventIO, Wire.EventIO>,
  Accepts<Views.ScopeForestJSON, Wire.ScopeForestJSON>,
  Accepts<Views.ScopeNodeJSON, Wire.ScopeNodeJSON>,
  Accepts<Views.ForestVarJSON, Wire.ForestVarJSON>,
  Accepts<Views.ScopeOrigin, Wire.ScopeOrigin>,
  Accepts<Views.ValuePreview, Wire.ValuePreview>,
  Accepts<Views.StepVarJSON, Wire.StepVarJSON>,
  Accepts<Views.ScopeJSON, Wire.ScopeJSON>,
  Accepts<Views.MemoryFlowJSON, Wire.MemoryFlowJSON>,
];
