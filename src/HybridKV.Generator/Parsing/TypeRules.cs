using System.Collections.Generic;
using HybridKV.Generator.Model;
using Microsoft.CodeAnalysis;

namespace HybridKV.Generator.Parsing;

/// <summary>Which types a store can hold, how keys are hashed, and how types are named in generated code.</summary>
internal static class TypeRules
{
    public static void CheckStorable(RoleTypes types, Location location, List<DiagnosticInfo> diagnostics)
    {
        void Check(string role, ITypeSymbol type, bool inLog)
        {
            string? reason = WhyNotUsable(type) ?? (inLog ? WhyNotInLog(type) : null);
            if (reason is not null)
            {
                diagnostics.Add(DiagnosticInfo.Create(Descriptors.UnsupportedType, location, role,
                    type.ToDisplayString(), reason));
            }
        }

        Check("Key", types.Key, inLog: true);
        Check("Value", types.Value, inLog: true);
        Check("Input", types.Input, inLog: false);
        Check("Output", types.Output, inLog: false);
        Check("Context", types.Context, inLog: false);
    }

    /// <summary>Why a type cannot be a type argument of the store at all, or null if it can.</summary>
    private static string? WhyNotUsable(ITypeSymbol type) => type switch
    {
        { SpecialType: SpecialType.System_Void } => "void is not a type a value can have",
        { TypeKind: TypeKind.Pointer or TypeKind.FunctionPointer } => "pointers cannot be type arguments",
        { IsRefLikeType: true } => "a ref struct cannot be a type argument",
        { IsStatic: true } => "a static class has no instances",
        { TypeKind: TypeKind.TypeParameter } => "a type parameter is not a concrete type",
        _ => null,
    };

    /// <summary>Why a key or value cannot be copied into the log as raw bytes, or null if it can.</summary>
    private static string? WhyNotInLog(ITypeSymbol type) =>
        type.IsUnmanagedType
            ? null
            : "keys and values are copied into the log as raw bytes, so they must be unmanaged structs " +
              $"with no references, and {(type.IsReferenceType ? "it is a reference type" : "it holds references")}";

    /// <summary>Whether a type is <c>HybridKV.VarBytes</c>, the byte sequence the store keeps with its length.</summary>
    public static bool IsByteSequence(ITypeSymbol type) => IsHybridKVType(type, "VarBytes");

    /// <summary>Whether a type is <c>HybridKV.VarBytesOutput</c>.</summary>
    public static bool IsByteSequenceOutput(ITypeSymbol type) => IsHybridKVType(type, "VarBytesOutput");

    private static bool IsHybridKVType(ITypeSymbol type, string name) =>
        type.Name == name && type.ContainingNamespace is { Name: "HybridKV", ContainingNamespace.IsGlobalNamespace: true };

    public static KeyHashKind HashKind(ITypeSymbol key) =>
        IsByteSequence(key) ? KeyHashKind.ByteSequence
        : key.TypeKind == TypeKind.Enum || key.SpecialType is SpecialType.System_Int64 or SpecialType.System_UInt64
            or SpecialType.System_Int32 or SpecialType.System_UInt32 or SpecialType.System_Int16
            or SpecialType.System_UInt16 or SpecialType.System_Byte or SpecialType.System_SByte
            or SpecialType.System_Char or SpecialType.System_IntPtr or SpecialType.System_UIntPtr
            ? KeyHashKind.Integral
            : KeyHashKind.Bytes;

    public static string Name(ITypeSymbol type) => type.ToDisplayString(SymbolDisplayFormat.FullyQualifiedFormat);

    /// <summary>Whether code outside the assembly can see the type (and so a public store may expose it).</summary>
    public static bool IsEffectivelyPublic(ITypeSymbol type)
    {
        switch (type)
        {
            case IArrayTypeSymbol array:
                return IsEffectivelyPublic(array.ElementType);
            case INamedTypeSymbol named:
                for (INamedTypeSymbol? current = named; current is not null; current = current.ContainingType)
                {
                    if (current.DeclaredAccessibility != Accessibility.Public)
                    {
                        return false;
                    }
                }

                foreach (ITypeSymbol argument in named.TypeArguments)
                {
                    if (!IsEffectivelyPublic(argument))
                    {
                        return false;
                    }
                }

                return true;
            default:
                return false;
        }
    }
}
