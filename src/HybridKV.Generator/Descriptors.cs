using Microsoft.CodeAnalysis;

namespace HybridKV.Generator;

/// <summary>
/// The generator's diagnostics. The ids are stable: they are what users suppress and search for, so a new check gets
/// a new id and a retired one is never reused.
/// </summary>
internal static class Descriptors
{
    private const string Category = "HybridKV.Generator";

    public static readonly DiagnosticDescriptor NotPartial = new(
        "HKV001",
        "The store class must be partial",
        "'{0}' must be declared partial so that HybridKV can generate its store into it",
        Category, DiagnosticSeverity.Error, isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor UnsupportedType = new(
        "HKV002",
        "The store cannot hold this type",
        "The {0} type '{1}' cannot be used: {2}",
        Category, DiagnosticSeverity.Error, isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor WrongCallbackSignature = new(
        "HKV003",
        "A callback does not have the signature the store calls",
        "The callback '{0}' does not have the signature the store calls; expected: {1}",
        Category, DiagnosticSeverity.Error, isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor MissingArgument = new(
        "HKV004",
        "A required argument of [GeneratedStore] is missing",
        "[GeneratedStore] on '{0}' needs the {1} argument, for example {1} = typeof(long)",
        Category, DiagnosticSeverity.Error, isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor ConflictingArguments = new(
        "HKV005",
        "Arguments of [GeneratedStore] conflict",
        "[GeneratedStore] on '{0}': {1}",
        Category, DiagnosticSeverity.Error, isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor MissingCallback = new(
        "HKV006",
        "A callback has no default for these types",
        "'{0}' needs {1}: {2}",
        Category, DiagnosticSeverity.Error, isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor GenericClass = new(
        "HKV007",
        "The store class cannot be generic",
        "'{0}' is generic; a generated store needs concrete types, so declare it in a non-generic class",
        Category, DiagnosticSeverity.Error, isEnabledByDefault: true);

    private static readonly DiagnosticDescriptor[] All =
    [
        NotPartial, UnsupportedType, WrongCallbackSignature, MissingArgument, ConflictingArguments, MissingCallback,
        GenericClass,
    ];

    public static DiagnosticDescriptor ById(string id)
    {
        foreach (DiagnosticDescriptor descriptor in All)
        {
            if (descriptor.Id == id)
            {
                return descriptor;
            }
        }

        throw new System.ArgumentOutOfRangeException(nameof(id), id, "No HybridKV generator diagnostic has this id.");
    }
}
