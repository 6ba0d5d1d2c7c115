using HybridKV.Generator.Model;

namespace HybridKV.Generator.Emitting;

/// <summary>Emits the store class: the engine's store over the generated functions, with sessions of the generated type.</summary>
internal static class StoreClassEmitter
{
    public static void Emit(SourceWriter writer, StoreModel model)
    {
        string session = model.SessionTypeName;
        const string Checkpoints = "global::HybridKV.Checkpoints";
        const string Tasks = "global::System.Threading.Tasks";
        const string Token = "global::System.Threading.CancellationToken";
        const string Guid = "global::System.Guid";

        writer.Line("/// <summary>")
            .Line($"/// The store of <see cref=\"{model.ClassName}\"/>: a HybridKV store whose callbacks are the class's, " +
                "bound statically.")
            .Line("/// Operations go through sessions; dispose the store after its sessions have finished.")
            .Line("/// </summary>")
            .Open($"{model.Accessibility} sealed class {model.StoreTypeName} : " +
                $"global::HybridKV.IHybridKVStore<{model.StoreTypeName}, {session}>")
            .Line($"private readonly {StoreEmitter.EngineStore(model)} _store;")
            .Line()
            .Line("/// <summary>Creates an empty store (recover it with <see cref=\"RecoverAsync\"/> before use).</summary>")
            .Line("/// <param name=\"settings\">Sizes, device, checkpoints and logging; validated here.</param>")
            .Line("/// <exception cref=\"global::System.ArgumentOutOfRangeException\">A setting is invalid.</exception>")
            .Line($"public {model.StoreTypeName}(global::HybridKV.StoreSettings settings) => _store = new(settings);")
            .Line()
            .Line("/// <inheritdoc/>")
            .Line($"static {model.StoreTypeName} global::HybridKV.IHybridKVStore<{model.StoreTypeName}, {session}>.Create(" +
                "global::HybridKV.StoreSettings settings) => new(settings);")
            .Line()
            .Line("/// <summary>The engine's store, for what this class does not forward (such as log truncation).</summary>")
            .Line($"public {StoreEmitter.EngineStore(model)} Underlying => _store;")
            .Line()
            .Line("/// <summary>The settings the store was created with.</summary>")
            .Line("public global::HybridKV.StoreSettings Settings => _store.Settings;")
            .Line()
            .Line("/// <summary>The log address after the newest record.</summary>")
            .Line("public long TailAddress => _store.TailAddress;")
            .Line()
            .Line("/// <summary>The log address below which records are read-only (updates copy them to the tail).</summary>")
            .Line("public long ReadOnlyAddress => _store.ReadOnlyAddress;")
            .Line()
            .Line("/// <summary>The log address below which records are on the device only.</summary>")
            .Line("public long HeadAddress => _store.HeadAddress;")
            .Line()
            .Line("/// <summary>The lowest log address still part of the log.</summary>")
            .Line("public long BeginAddress => _store.BeginAddress;")
            .Line()
            .Line("/// <summary>The number of buckets the hash index has now.</summary>")
            .Line("public long IndexBucketCount => _store.IndexBucketCount;")
            .Line()
            .Line("/// <summary>The number of sessions open now.</summary>")
            .Line("public int OpenSessionCount => _store.OpenSessionCount;")
            .Line()
            .Line("/// <summary>Whether the store holds existing data that <see cref=\"RecoverAsync\"/> has not recovered yet.</summary>")
            .Line("public bool IsRecoveryRequired => _store.IsRecoveryRequired;")
            .Line()
            .Line("/// <summary>Whether some session has issued an operation that no durable checkpoint holds yet.</summary>")
            .Line("public bool HasUncommittedOperations => _store.HasUncommittedOperations;")
            .Line()
            .Line("/// <summary>Why writing the log to its device failed, or null while it has not.</summary>")
            .Line("public global::System.Exception? DeviceError => _store.DeviceError;")
            .Line()
            .Line("/// <summary>Opens a session with a new identity: one logical thread of operations.</summary>")
            .Line($"public {session} NewSession() => new(_store.NewSession());")
            .Line()
            .Line("/// <summary>Opens a session with the given identity, under which its commit points are recorded.</summary>")
            .Line("/// <param name=\"id\">The session's identity.</param>")
            .Line($"public {session} NewSession({Guid} id) => new(_store.NewSession(id));")
            .Line()
            .Line("/// <summary>Continues a session after recovery, telling which of its operations survived.</summary>")
            .Line("/// <param name=\"id\">The identity of the session to continue.</param>")
            .Line("/// <param name=\"recovered\">The session's recovered commit point.</param>")
            .Line($"public {session} ContinueSession({Guid} id, out {Checkpoints}.CommitPoint recovered) =>")
            .Line("    new(_store.ContinueSession(id, out recovered));")
            .Line()
            .Line("/// <summary>Takes a CPR checkpoint; completes with its token once it is durable.</summary>")
            .Line("/// <param name=\"kind\">Full (index and log) or log only.</param>")
            .Line("/// <param name=\"mode\">Fold-over or snapshot.</param>")
            .Line("/// <param name=\"cancellationToken\">Stops waiting; a checkpoint under way completes.</param>")
            .Line($"public {Tasks}.Task<{Guid}> TakeCheckpointAsync(")
            .Line($"    {Checkpoints}.CheckpointKind kind = {Checkpoints}.CheckpointKind.Full,")
            .Line($"    {Checkpoints}.CheckpointMode mode = {Checkpoints}.CheckpointMode.FoldOver,")
            .Line($"    {Token} cancellationToken = default) =>")
            .Line("    _store.TakeCheckpointAsync(kind, mode, cancellationToken);")
            .Line()
            .Line("/// <summary>Recovers the newest (or the given) checkpoint that verifies; null if there is none.</summary>")
            .Line("/// <param name=\"token\">A checkpoint to recover instead of the newest.</param>")
            .Line("/// <param name=\"progress\">Receives replay progress.</param>")
            .Line("/// <param name=\"cancellationToken\">Abandons recovery; the store must then be discarded.</param>")
            .Line($"public {Tasks}.Task<{Checkpoints}.RecoveryResult?> RecoverAsync(")
            .Line($"    {Guid}? token = null,")
            .Line($"    global::System.IProgress<{Checkpoints}.RecoveryProgress>? progress = null,")
            .Line($"    {Token} cancellationToken = default) =>")
            .Line("    _store.RecoverAsync(token, progress, cancellationToken);")
            .Line()
            .Line("/// <summary>Waits for operations in progress, then releases memory, devices and files.</summary>")
            .Line("public void Dispose() => _store.Dispose();")
            .Close();
    }
}
