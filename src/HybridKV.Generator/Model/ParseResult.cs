namespace HybridKV.Generator.Model;

/// <summary>What parsing one attributed class yields: a model to emit (none if it has errors) and its diagnostics.</summary>
internal sealed record ParseResult(StoreModel? Model, EquatableArray<DiagnosticInfo> Diagnostics);
