using System.Collections.Immutable;
using System.Linq;
using Microsoft.CodeAnalysis;

namespace HybridKV.Generator;

/// <summary>What a callback parameter or result stands for; the parser maps each to the store's actual type.</summary>
internal enum Role
{
    Key,
    Value,
    Input,
    Output,
    Context,
    Status,
}

/// <summary>One parameter of a callback: how it is passed, what it stands for, and its name in messages.</summary>
internal sealed record CallbackParameter(RefKind RefKind, Role Role, string Name);

/// <summary>A callback the engine calls, as <c>IFunctions</c> declares it (FASTER appendix E).</summary>
internal sealed record Callback(string Name, SpecialType Returns, ImmutableArray<CallbackParameter> Parameters)
{
    public string ReturnKeyword => Returns switch
    {
        SpecialType.System_Int64 => "long",
        SpecialType.System_Int32 => "int",
        SpecialType.System_Boolean => "bool",
        _ => "void",
    };
}

/// <summary>The callbacks a store class may write, with the signatures the generated functions call.</summary>
internal static class Callbacks
{
    public const string GetHashCode64 = nameof(GetHashCode64);
    public const string KeyEquals = nameof(KeyEquals);
    public const string SingleReader = nameof(SingleReader);
    public const string ConcurrentReader = nameof(ConcurrentReader);
    public const string SingleWriter = nameof(SingleWriter);
    public const string ConcurrentWriter = nameof(ConcurrentWriter);
    public const string InitialUpdater = nameof(InitialUpdater);
    public const string InPlaceUpdater = nameof(InPlaceUpdater);
    public const string CopyUpdater = nameof(CopyUpdater);
    public const string ReadCompletionCallback = nameof(ReadCompletionCallback);
    public const string RMWCompletionCallback = nameof(RMWCompletionCallback);
    public const string DeleteCompletionCallback = nameof(DeleteCompletionCallback);
    public const string GetInitialValueLength = nameof(GetInitialValueLength);
    public const string GetUpdatedValueLength = nameof(GetUpdatedValueLength);

    public static readonly ImmutableArray<Callback> All =
    [
        Make(GetHashCode64, SpecialType.System_Int64, (RefKind.In, Role.Key, "key")),
        Make(KeyEquals, SpecialType.System_Boolean, (RefKind.In, Role.Key, "first"), (RefKind.In, Role.Key, "second")),
        Make(SingleReader, SpecialType.System_Void, (RefKind.In, Role.Key, "key"), (RefKind.In, Role.Input, "input"),
            (RefKind.In, Role.Value, "value"), (RefKind.Ref, Role.Output, "output")),
        Make(ConcurrentReader, SpecialType.System_Void, (RefKind.In, Role.Key, "key"),
            (RefKind.In, Role.Input, "input"), (RefKind.In, Role.Value, "value"), (RefKind.Ref, Role.Output, "output")),
        Make(SingleWriter, SpecialType.System_Void, (RefKind.In, Role.Key, "key"), (RefKind.In, Role.Value, "source"),
            (RefKind.Ref, Role.Value, "destination")),
        Make(ConcurrentWriter, SpecialType.System_Void, (RefKind.In, Role.Key, "key"),
            (RefKind.In, Role.Value, "source"), (RefKind.Ref, Role.Value, "destination")),
        Make(InitialUpdater, SpecialType.System_Void, (RefKind.In, Role.Key, "key"), (RefKind.In, Role.Input, "input"),
            (RefKind.Ref, Role.Value, "value")),
        Make(InPlaceUpdater, SpecialType.System_Void, (RefKind.In, Role.Key, "key"), (RefKind.In, Role.Input, "input"),
            (RefKind.Ref, Role.Value, "value")),
        Make(CopyUpdater, SpecialType.System_Void, (RefKind.In, Role.Key, "key"), (RefKind.In, Role.Input, "input"),
            (RefKind.In, Role.Value, "oldValue"), (RefKind.Ref, Role.Value, "newValue")),
        Make(ReadCompletionCallback, SpecialType.System_Void, (RefKind.In, Role.Key, "key"),
            (RefKind.In, Role.Input, "input"), (RefKind.In, Role.Output, "output"), (RefKind.None, Role.Context, "context"),
            (RefKind.None, Role.Status, "status")),
        Make(RMWCompletionCallback, SpecialType.System_Void, (RefKind.In, Role.Key, "key"),
            (RefKind.In, Role.Input, "input"), (RefKind.None, Role.Context, "context"),
            (RefKind.None, Role.Status, "status")),
        Make(DeleteCompletionCallback, SpecialType.System_Void, (RefKind.In, Role.Key, "key"),
            (RefKind.None, Role.Context, "context"), (RefKind.None, Role.Status, "status")),
        Make(GetInitialValueLength, SpecialType.System_Int32, (RefKind.In, Role.Key, "key"),
            (RefKind.In, Role.Input, "input")),
        Make(GetUpdatedValueLength, SpecialType.System_Int32, (RefKind.In, Role.Key, "key"),
            (RefKind.In, Role.Input, "input"), (RefKind.In, Role.Value, "value")),
    ];

    /// <summary>Whether the store calls a callback at all: the value lengths only for byte-sequence values.</summary>
    public static bool AppliesTo(Callback callback, bool variableValue) =>
        variableValue || (callback.Name != GetInitialValueLength && callback.Name != GetUpdatedValueLength);

    public static Callback Named(string name) => All.First(callback => callback.Name == name);

    private static Callback Make(string name, SpecialType returns, params (RefKind RefKind, Role Role, string Name)[] parameters) =>
        new(name, returns, [.. parameters.Select(p => new CallbackParameter(p.RefKind, p.Role, p.Name))]);
}
