using System.Linq;
using HybridKV.Generator.Model;
using Microsoft.CodeAnalysis;

namespace HybridKV.Generator.Emitting;

/// <summary>
/// Emits the <c>Functions</c> struct: one method per callback of <c>IFunctions</c>, each either a direct call to
/// the class's static callback or a default body. The engine is generic over this struct, so the JIT sees straight
/// through it.
/// </summary>
internal static class FunctionsEmitter
{
    public static void Emit(SourceWriter writer, StoreModel model)
    {
        writer.Line("/// <summary>")
            .Line($"/// The callbacks of <see cref=\"{model.ClassName}\"/> bound statically: the struct the engine is " +
                "generic over,")
            .Line("/// so that every call below is inlined into the store's operations.")
            .Line("/// </summary>")
            .Open($"{model.Accessibility} readonly struct Functions : global::HybridKV.IFunctions<{TypeArguments(model)}>");
        bool first = true;
        foreach (Callback callback in Callbacks.All)
        {
            if (!Callbacks.AppliesTo(callback, model.VariableValue))
            {
                continue;
            }

            if (!first)
            {
                writer.Line();
            }

            first = false;
            string signature = $"public {callback.ReturnKeyword} {callback.Name}({Parameters(callback, model)})";
            writer.Line("/// <inheritdoc/>").Line(SourceWriter.AggressiveInlining);
            string[] statements = Body(callback, model);
            if (statements.Length == 1)
            {
                writer.Line($"{signature} => {statements[0]}");
            }
            else
            {
                writer.Open(signature);
                foreach (string statement in statements)
                {
                    writer.Line(statement);
                }

                writer.Close();
            }
        }

        writer.Close();
    }

    public static string TypeArguments(StoreModel model) =>
        $"{model.Key}, {model.Value}, {model.Input}, {model.Output}, {model.Context}";

    private static string Parameters(Callback callback, StoreModel model) =>
        string.Join(", ", callback.Parameters.Select(p => $"{Modifier(p.RefKind)}{TypeOf(p.Role, model)} {p.Name}"));

    private static string Arguments(Callback callback) =>
        string.Join(", ", callback.Parameters.Select(p => $"{Modifier(p.RefKind)}{p.Name}"));

    private static string Modifier(RefKind refKind) => refKind switch
    {
        RefKind.In => "in ",
        RefKind.Ref => "ref ",
        _ => string.Empty,
    };

    private static string TypeOf(Role role, StoreModel model) => role switch
    {
        Role.Key => model.Key,
        Role.Value => model.Value,
        Role.Input => model.Input,
        Role.Output => model.Output,
        Role.Context => model.Context,
        _ => "global::HybridKV.Status",
    };

    /// <summary>The body: one expression, or several statements (none for an empty body).</summary>
    private static string[] Body(Callback callback, StoreModel model)
    {
        string Call(string name) => $"{model.FullClassName}.{name}({Arguments(Callbacks.Named(name))});";

        if (model.Writes(callback.Name))
        {
            return [Call(callback.Name)];
        }

        if (callback.Name is Callbacks.GetHashCode64 or Callbacks.KeyEquals)
        {
            return KeyBody(callback.Name, model.KeyHash);
        }

        if (model.VariableValue)
        {
            return ByteSequenceValueBody(callback, model);
        }

        return callback.Name switch
        {
            Callbacks.SingleReader => model.Writes(Callbacks.ConcurrentReader)
                ? [Call(Callbacks.ConcurrentReader)]
                : ["output = value;"],
            Callbacks.ConcurrentReader => ["SingleReader(in key, in input, in value, ref output);"],
            Callbacks.SingleWriter => model.Writes(Callbacks.ConcurrentWriter)
                ? [Call(Callbacks.ConcurrentWriter)]
                : ["destination = source;"],
            Callbacks.ConcurrentWriter => model.Writes(Callbacks.SingleWriter)
                ? [Call(Callbacks.SingleWriter)]
                : ["destination = source;"],
            Callbacks.InPlaceUpdater => model.Writes(Callbacks.CopyUpdater)
                ?
                [
                    $"{model.Value} oldValue = value;",
                    $"{model.FullClassName}.{Callbacks.CopyUpdater}(in key, in input, in oldValue, ref value);",
                ]
                : ["value = input;"],
            Callbacks.CopyUpdater => ["newValue = oldValue;", "InPlaceUpdater(in key, in input, ref newValue);"],
            Callbacks.InitialUpdater => ["value = default;", "InPlaceUpdater(in key, in input, ref value);"],
            _ => [],
        };
    }

    private static string[] KeyBody(string name, KeyHashKind hash) => (name, hash) switch
    {
        (Callbacks.GetHashCode64, KeyHashKind.Integral) => ["global::HybridKV.KeyHashing.Mix(unchecked((long)key));"],
        (Callbacks.GetHashCode64, KeyHashKind.ByteSequence) =>
            ["global::HybridKV.KeyHashing.HashSpan(key.AsReadOnlySpan());"],
        (Callbacks.GetHashCode64, _) => ["global::HybridKV.KeyHashing.HashBytes(in key);"],
        (_, KeyHashKind.Integral) => ["first == second;"],
        (_, KeyHashKind.ByteSequence) =>
            ["global::System.MemoryExtensions.SequenceEqual(first.AsReadOnlySpan(), second.AsReadOnlySpan());"],
        _ => ["global::HybridKV.KeyHashing.BytesEqual(in first, in second);"],
    };

    /// <summary>
    /// Defaults over byte-sequence values: bytes are copied, never the <c>VarBytes</c> that describes them (it points
    /// into the log or at the caller's memory). The parser has checked that every default used here applies: reads
    /// need a <c>VarBytesOutput</c>, and RMW defaults a <c>VarBytes</c> input, which they store.
    /// </summary>
    private static string[] ByteSequenceValueBody(Callback callback, StoreModel model)
    {
        string Call(string name) => $"{model.FullClassName}.{name}({Arguments(Callbacks.Named(name))});";
        const string StoreInput = "input.AsReadOnlySpan().CopyTo(value.AsSpan());";
        return callback.Name switch
        {
            Callbacks.SingleReader => model.Writes(Callbacks.ConcurrentReader)
                ? [Call(Callbacks.ConcurrentReader)]
                : ["output.SetValue(value.AsReadOnlySpan());"],
            Callbacks.ConcurrentReader => ["SingleReader(in key, in input, in value, ref output);"],
            Callbacks.SingleWriter => model.Writes(Callbacks.ConcurrentWriter)
                ? [Call(Callbacks.ConcurrentWriter)]
                : ["source.AsReadOnlySpan().CopyTo(destination.AsSpan());"],
            Callbacks.ConcurrentWriter => model.Writes(Callbacks.SingleWriter)
                ? [Call(Callbacks.SingleWriter)]
                : ["source.AsReadOnlySpan().CopyTo(destination.AsSpan());"],
            Callbacks.GetInitialValueLength or Callbacks.GetUpdatedValueLength => ["input.Length;"],
            Callbacks.InitialUpdater => [StoreInput],
            Callbacks.InPlaceUpdater => ["value.Length = input.Length;", StoreInput],
            Callbacks.CopyUpdater => ["input.AsReadOnlySpan().CopyTo(newValue.AsSpan());"],
            _ => [],
        };
    }
}
