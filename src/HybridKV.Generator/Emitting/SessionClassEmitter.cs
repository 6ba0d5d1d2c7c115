using HybridKV.Generator.Model;

namespace HybridKV.Generator.Emitting;

/// <summary>
/// Emits the session class: the engine's session with the store's types spelled out, every operation forwarded by
/// an inlined call, so that user code names one short type and pays nothing for it.
/// </summary>
internal static class SessionClassEmitter
{
    public static void Emit(SourceWriter writer, StoreModel model)
    {
        const string Status = "global::HybridKV.Status";
        const string Tasks = "global::System.Threading.Tasks";
        const string Token = "global::System.Threading.CancellationToken";
        const string Expiration = "global::HybridKV.Expiration";
        const string CommitPoint = "global::HybridKV.Checkpoints.CommitPoint";
        string key = model.Key;
        string value = model.Value;
        string input = model.Input;
        string output = model.Output;
        string context = model.Context;

        writer.Line("/// <summary>")
            .Line($"/// A session of <see cref=\"{model.StoreTypeName}\"/>: one logical thread of operations, numbered " +
                "by serial number.")
            .Line("/// Use it from one caller at a time (across awaits is fine); dispose it when done.")
            .Line("/// </summary>")
            .Open($"{model.Accessibility} sealed class {model.SessionTypeName} : global::HybridKV.IHybridKVSession")
            .Line($"private readonly {StoreEmitter.EngineSession(model)} _session;")
            .Line()
            .Line($"internal {model.SessionTypeName}({StoreEmitter.EngineSession(model)} session) => _session = session;")
            .Line()
            .Line("/// <summary>The engine's session.</summary>")
            .Line($"public {StoreEmitter.EngineSession(model)} Underlying => _session;")
            .Line()
            .Line("/// <summary>The session's identity, which <c>ContinueSession</c> takes after recovery.</summary>")
            .Line("public global::System.Guid Id => _session.Id;")
            .Line()
            .Line("/// <summary>The serial number the next operation takes; may be moved forward, never back.</summary>")
            .Line("public long NextSerialNo { get => _session.NextSerialNo; set => _session.NextSerialNo = value; }")
            .Line()
            .Line("/// <summary>The serial number of the last operation issued, or 0 before the first.</summary>")
            .Line("public long LastSerialNo => _session.LastSerialNo;")
            .Line()
            .Line("/// <summary>The number of operations that returned Pending and have not completed.</summary>")
            .Line("public int PendingCount => _session.PendingCount;")
            .Line()
            .Line("/// <summary>Whether a protected scope of this session is open.</summary>")
            .Line("public bool InProtectedScope => _session.InProtectedScope;")
            .Line()
            .Line("/// <summary>The newest durable commit point of this session.</summary>")
            .Line($"public {CommitPoint} DurableCommitPoint => _session.DurableCommitPoint;")
            .Line()
            .Line("/// <summary>Raised when a checkpoint holding this session's operations is durable (the sender is " +
                "<see cref=\"Underlying\"/>).</summary>")
            .Open($"public event global::System.EventHandler<{CommitPoint}>? Committed")
            .Line("add => _session.Committed += value;")
            .Line("remove => _session.Committed -= value;")
            .Close()
            .Line();

        Forward(writer, "Reads a key with the default input.",
            $"{Status} Read(in {key} key, ref {output} output)", "_session.Read(in key, ref output)");
        Forward(writer, "Reads a key: a reader callback turns the value and input into the output.",
            $"{Status} Read(in {key} key, in {input} input, ref {output} output, {context} context)",
            "_session.Read(in key, in input, ref output, context)");
        Forward(writer, "Inserts or overwrites the value of a key.",
            $"{Status} Upsert(in {key} key, in {value} value)", "_session.Upsert(in key, in value)");
        Forward(writer, "Inserts or overwrites the value of a key, which expires as the expiration says.",
            $"{Status} Upsert(in {key} key, in {value} value, {Expiration} expiration)",
            "_session.Upsert(in key, in value, expiration)");
        Forward(writer, "Read-modify-write with the default context.",
            $"{Status} RMW(in {key} key, in {input} input)", "_session.RMW(in key, in input)");
        Forward(writer, "Updates a key from its current value and the input.",
            $"{Status} RMW(in {key} key, in {input} input, {context} context)", "_session.RMW(in key, in input, context)");
        Forward(writer, "Read-modify-write whose resulting value expires as the expiration says.",
            $"{Status} RMW(in {key} key, in {input} input, {Expiration} expiration, {context} context = default!)",
            "_session.RMW(in key, in input, expiration, context)");
        Forward(writer, "Deletes a key with the default context.",
            $"{Status} Delete(in {key} key)", "_session.Delete(in key)");
        Forward(writer, "Deletes a key.",
            $"{Status} Delete(in {key} key, {context} context)", "_session.Delete(in key, context)");
        Forward(writer, "Continues pending operations; with <paramref name=\"wait\"/>, until none is left.",
            "bool CompletePending(bool wait = false)", "_session.CompletePending(wait)");
        Forward(writer, "Holds epoch protection across the operations that follow, refreshing it every " +
            "<paramref name=\"refreshInterval\"/> operations, until the scope is disposed.",
            "global::HybridKV.Sessions.ProtectedScope BeginProtectedScope(int refreshInterval = 256)",
            "_session.BeginProtectedScope(refreshInterval)");
        Forward(writer, "Starts loading into the processor's caches what operations on the keys read first, so that " +
            "operations on them issued right after overlap their cache misses (a hint: it changes nothing).",
            $"void Prefetch(global::System.ReadOnlySpan<{key}> keys)", "_session.Prefetch(keys)");
        Forward(writer, "Reads many keys with the default input, in order, overlapping their memory accesses.",
            $"void Read(global::System.ReadOnlySpan<{key}> keys, global::System.Span<{output}> outputs, " +
            $"global::System.Span<{Status}> statuses)", "_session.Read(keys, outputs, statuses)");
        Forward(writer, "Reads a key, awaiting the device if the record is not in memory.",
            $"{Tasks}.ValueTask<global::HybridKV.ReadResult<{output}>> ReadAsync({key} key, {input} input = default!, " +
            $"{context} context = default!, {Token} cancellationToken = default)",
            "_session.ReadAsync(key, input, context, cancellationToken)");
        Forward(writer, "Inserts or overwrites a value, awaiting log space if needed.",
            $"{Tasks}.ValueTask<{Status}> UpsertAsync({key} key, {value} value, {Token} cancellationToken = default)",
            "_session.UpsertAsync(key, value, cancellationToken)");
        Forward(writer, "Inserts or overwrites a value which expires as the expiration says, awaiting log space if needed.",
            $"{Tasks}.ValueTask<{Status}> UpsertAsync({key} key, {value} value, {Expiration} expiration, " +
            $"{Token} cancellationToken = default)",
            "_session.UpsertAsync(key, value, expiration, cancellationToken)");
        Forward(writer, "Read-modify-write, awaiting the device or log space as needed.",
            $"{Tasks}.ValueTask<{Status}> RMWAsync({key} key, {input} input, {context} context = default!, " +
            $"{Token} cancellationToken = default)",
            "_session.RMWAsync(key, input, context, cancellationToken)");
        Forward(writer, "Read-modify-write whose resulting value expires as the expiration says, awaiting as needed.",
            $"{Tasks}.ValueTask<{Status}> RMWAsync({key} key, {input} input, {Expiration} expiration, " +
            $"{context} context = default!, {Token} cancellationToken = default)",
            "_session.RMWAsync(key, input, expiration, context, cancellationToken)");
        Forward(writer, "Deletes a key, awaiting the device or log space as needed.",
            $"{Tasks}.ValueTask<{Status}> DeleteAsync({key} key, {context} context = default!, " +
            $"{Token} cancellationToken = default)",
            "_session.DeleteAsync(key, context, cancellationToken)");
        Forward(writer, "Completes every pending operation, awaiting the device instead of blocking.",
            $"{Tasks}.Task CompletePendingAsync({Token} cancellationToken = default)",
            "_session.CompletePendingAsync(cancellationToken)");
        Forward(writer, "Completes once every operation up to the serial number is in a durable checkpoint.",
            $"{Tasks}.Task WaitForCommitAsync(long serialNo, {Token} cancellationToken = default)",
            "_session.WaitForCommitAsync(serialNo, cancellationToken)");
        if (model.VariableKey)
        {
            EmitByteSequenceForms(writer, model);
        }

        writer.Line("/// <summary>Closes the session; its commit points stay recorded for the next checkpoint.</summary>")
            .Line("public void Dispose() => _session.Dispose();")
            .Close();
    }

    /// <summary>
    /// The span, memory and UTF-8 string forms of <c>HybridKV.VarBytesSessionExtensions</c>, for byte-sequence keys
    /// (and values, and reads into buffers or pooled memory where the types allow them).
    /// </summary>
    private static void EmitByteSequenceForms(SourceWriter writer, StoreModel model)
    {
        const string Status = "global::HybridKV.Status";
        const string Bytes = "global::System.ReadOnlySpan<byte>";
        const string Memory = "global::System.ReadOnlyMemory<byte>";
        const string Token = "global::System.Threading.CancellationToken";
        const string Tasks = "global::System.Threading.Tasks";
        const string Owner = "global::System.Buffers.IMemoryOwner<byte>";
        const string Extensions = "global::HybridKV.VarBytesSessionExtensions";
        bool inputIsBytes = model.Input == "global::HybridKV.VarBytes";

        foreach (string key in new[] { Bytes, "string" })
        {
            string what = key == "string" ? "a UTF-8 string key" : "a byte-sequence key";
            if (model.VariableValue)
            {
                Forward(writer, $"Inserts or overwrites the value of {what}.",
                    $"{Status} Upsert({key} key, {Bytes} value)", $"{Extensions}.Upsert(_session, key, value)");
            }

            if (model.ReadsIntoBytes)
            {
                Forward(writer, $"Reads the value of {what} into a buffer (if it fits), waiting for the device.",
                    $"{Status} Read({key} key, global::System.Span<byte> destination, out int valueLength)",
                    $"{Extensions}.Read(_session, key, destination, out valueLength)");
                Forward(writer, $"Reads the value of {what} into pooled memory (dispose it), waiting for the device.",
                    $"{Status} Read({key} key, out {Owner}? value)", $"{Extensions}.Read(_session, key, out value)");
            }

            if (inputIsBytes)
            {
                Forward(writer, $"Read-modify-write of {what} with a byte-sequence input.",
                    $"{Status} RMW({key} key, {Bytes} input)", $"{Extensions}.RMW(_session, key, input)");
            }

            Forward(writer, $"Deletes {what}.", $"{Status} Delete({key} key)", $"{Extensions}.Delete(_session, key)");
        }

        if (!model.VariableValue)
        {
            Forward(writer, "Inserts or overwrites the value of a byte-sequence key.",
                $"{Status} Upsert({Bytes} key, in {model.Value} value)", $"{Extensions}.Upsert(_session, key, in value)");
        }

        Forward(writer, "Reads a byte-sequence key with the session's output type.",
            $"{Status} Read({Bytes} key, ref {model.Output} output)", $"{Extensions}.Read(_session, key, ref output)");
        Forward(writer, "Read-modify-write of a byte-sequence key.",
            $"{Status} RMW({Bytes} key, in {model.Input} input)", $"{Extensions}.RMW(_session, key, in input)");
        if (model.VariableValue)
        {
            Forward(writer, "Inserts or overwrites a value, awaiting log space; the memory stays pinned meanwhile.",
                $"{Tasks}.ValueTask<{Status}> UpsertAsync({Memory} key, {Memory} value, {Token} cancellationToken = default)",
                $"{Extensions}.UpsertAsync(_session, key, value, cancellationToken)");
        }

        if (model.ReadsIntoBytes)
        {
            Forward(writer, "Reads a value into pooled memory, awaiting the device.",
                $"{Tasks}.ValueTask<global::HybridKV.ReadResult<{Owner}?>> ReadAsync({Memory} key, " +
                $"{Token} cancellationToken = default)",
                $"{Extensions}.ReadAsync(_session, key, cancellationToken)");
        }

        Forward(writer, "Deletes a byte-sequence key, awaiting the device or log space.",
            $"{Tasks}.ValueTask<{Status}> DeleteAsync({Memory} key, {Token} cancellationToken = default)",
            $"{Extensions}.DeleteAsync(_session, key, cancellationToken)");
    }

    private static void Forward(SourceWriter writer, string summary, string signature, string call)
    {
        writer.Line($"/// <summary>{summary}</summary>")
            .Line(SourceWriter.AggressiveInlining)
            .Line($"public {signature} => {call};")
            .Line();
    }
}
