using System.Collections.Generic;
using System.Linq;
using HybridKV.Generator.Model;
using Microsoft.CodeAnalysis;

namespace HybridKV.Generator.Parsing;

/// <summary>Finds the callbacks a class writes and checks them against what the store calls.</summary>
internal static class CallbackMatcher
{
    /// <summary>
    /// The callbacks the class writes with the right signature. A method named like a callback but with another
    /// signature is reported, since the store would otherwise silently use a default in its place.
    /// </summary>
    public static List<string> FindWritten(INamedTypeSymbol type, RoleTypes types, List<DiagnosticInfo> diagnostics)
    {
        var written = new List<string>();
        foreach (Callback callback in Callbacks.All)
        {
            if (!Callbacks.AppliesTo(callback, types.VariableValue))
            {
                continue;
            }

            IMethodSymbol[] candidates = [.. type.GetMembers(callback.Name).OfType<IMethodSymbol>()];
            if (candidates.Length == 0)
            {
                continue;
            }

            if (candidates.Any(method => Matches(method, callback, types)))
            {
                written.Add(callback.Name);
            }
            else
            {
                diagnostics.Add(DiagnosticInfo.Create(Descriptors.WrongCallbackSignature,
                    candidates[0].Locations.FirstOrDefault(), callback.Name, Expected(callback, types)));
            }
        }

        return written;
    }

    /// <summary>Reports callbacks that are missing and have no default for these types.</summary>
    public static void CheckDefaultsExist(INamedTypeSymbol type, RoleTypes types, List<string> written,
        Location location, List<DiagnosticInfo> diagnostics)
    {
        void Missing(string what, string why) =>
            diagnostics.Add(DiagnosticInfo.Create(Descriptors.MissingCallback, location, type.Name, what, why));

        bool Writes(string name) => written.Contains(name);

        if (!Writes(Callbacks.SingleReader) && !Writes(Callbacks.ConcurrentReader) && !types.ReaderHasDefault)
        {
            Missing("a SingleReader or ConcurrentReader callback", types.VariableValue
                ? $"the Output type '{types.Output.ToDisplayString()}' is not HybridKV.VarBytesOutput, so a read " +
                  "cannot just copy the value's bytes"
                : $"the Output type '{types.Output.ToDisplayString()}' is not the Value type " +
                  $"'{types.Value.ToDisplayString()}', so a read cannot just copy the value");
        }

        if (types.VariableValue && !types.InputIsValue)
        {
            // A byte-sequence value's updaters cannot be derived from one another: a copy needs room sized first.
            string[] needed = [Callbacks.GetInitialValueLength, Callbacks.GetUpdatedValueLength, Callbacks.InitialUpdater,
                Callbacks.InPlaceUpdater, Callbacks.CopyUpdater];
            string[] missing = [.. needed.Where(name => !Writes(name))];
            if (missing.Length > 0)
            {
                Missing($"{string.Join(", ", missing)} callback{(missing.Length > 1 ? "s" : string.Empty)}",
                    $"the Value type is HybridKV.VarBytes and the Input type '{types.Input.ToDisplayString()}' is " +
                    "not, so an RMW must say how long the value it writes is and write it");
            }
        }

        if (!types.VariableValue && !Writes(Callbacks.InPlaceUpdater) && !Writes(Callbacks.CopyUpdater) &&
            !types.InputIsValue)
        {
            Missing("an InPlaceUpdater or CopyUpdater callback",
                $"the Input type '{types.Input.ToDisplayString()}' is not the Value type " +
                $"'{types.Value.ToDisplayString()}', so an RMW cannot just store its input");
        }

        if (Writes(Callbacks.GetHashCode64) != Writes(Callbacks.KeyEquals))
        {
            Missing(Writes(Callbacks.GetHashCode64) ? "a KeyEquals callback" : "a GetHashCode64 callback",
                "a key hash and a key equality only agree when both are written together");
        }
    }

    private static bool Matches(IMethodSymbol method, Callback callback, RoleTypes types)
    {
        if (!method.IsStatic || method.IsGenericMethod || method.ReturnType.SpecialType != callback.Returns ||
            method.ReturnsByRef || method.ReturnsByRefReadonly || method.Parameters.Length != callback.Parameters.Length)
        {
            return false;
        }

        for (int i = 0; i < callback.Parameters.Length; i++)
        {
            IParameterSymbol actual = method.Parameters[i];
            CallbackParameter expected = callback.Parameters[i];
            if (!SameRefKind(actual.RefKind, expected.RefKind) ||
                !SymbolEqualityComparer.Default.Equals(actual.Type, types.Of(expected.Role)))
            {
                return false;
            }
        }

        return true;
    }

    // A 'ref readonly' parameter accepts the 'in' argument the functions struct passes.
    private static bool SameRefKind(RefKind actual, RefKind expected) =>
        actual == expected || (expected == RefKind.In && actual == RefKind.RefReadOnlyParameter);

    /// <summary>The signature the store calls, with the store's types, as the diagnostic shows it.</summary>
    public static string Expected(Callback callback, RoleTypes types)
    {
        IEnumerable<string> parameters = callback.Parameters.Select(parameter =>
        {
            string modifier = parameter.RefKind switch
            {
                RefKind.In => "in ",
                RefKind.Ref => "ref ",
                _ => string.Empty,
            };
            return $"{modifier}{types.Of(parameter.Role).ToDisplayString()} {parameter.Name}";
        });
        return $"static {callback.ReturnKeyword} {callback.Name}({string.Join(", ", parameters)})";
    }
}
