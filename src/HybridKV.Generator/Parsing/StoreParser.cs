using System.Collections.Generic;
using System.Linq;
using System.Threading;
using HybridKV.Generator.Model;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace HybridKV.Generator.Parsing;

/// <summary>
/// Turns one class marked [GeneratedStore] into a <see cref="StoreModel"/>, or into the diagnostics that say why it
/// cannot become a store. All symbol access happens here; the emitter sees only the model.
/// </summary>
internal static class StoreParser
{
    public const string AttributeName = "HybridKV.GeneratedStoreAttribute";
    private const string FunctionsTypeName = "Functions";

    public static ParseResult Parse(GeneratorAttributeSyntaxContext context, CancellationToken cancellationToken)
    {
        var type = (INamedTypeSymbol)context.TargetSymbol;
        var declaration = (TypeDeclarationSyntax)context.TargetNode;
        var diagnostics = new List<DiagnosticInfo>();
        Location classLocation = declaration.Identifier.GetLocation();
        AttributeData attribute = context.Attributes[0];
        Location attributeLocation = attribute.ApplicationSyntaxReference?.GetSyntax(cancellationToken).GetLocation()
            ?? classLocation;

        CheckDeclaration(type, declaration, diagnostics, cancellationToken);
        StoreArguments arguments = StoreArguments.Read(attribute);
        if (arguments.HasErrorType)
        {
            return Result(null, diagnostics);
        }

        string className = type.Name;
        if (arguments.Key is null)
        {
            diagnostics.Add(DiagnosticInfo.Create(Descriptors.MissingArgument, attributeLocation, className, "Key"));
        }

        if (arguments.Value is null)
        {
            diagnostics.Add(DiagnosticInfo.Create(Descriptors.MissingArgument, attributeLocation, className, "Value"));
        }

        CheckNames(type, arguments, attributeLocation, diagnostics);
        if (arguments.Key is null || arguments.Value is null)
        {
            return Result(null, diagnostics);
        }

        var types = new RoleTypes(
            arguments.Key,
            arguments.Value,
            arguments.Input ?? arguments.Value,
            arguments.Output ?? arguments.Value,
            arguments.Context ?? context.SemanticModel.Compilation.GetTypeByMetadataName("HybridKV.Empty")!,
            context.SemanticModel.Compilation.GetTypeByMetadataName("HybridKV.Status")!);
        TypeRules.CheckStorable(types, attributeLocation, diagnostics);
        if (diagnostics.Count > 0)
        {
            return Result(null, diagnostics);
        }

        List<string> written = CallbackMatcher.FindWritten(type, types, diagnostics);
        CallbackMatcher.CheckDefaultsExist(type, types, written, classLocation, diagnostics);
        if (diagnostics.Count > 0)
        {
            return Result(null, diagnostics);
        }

        var model = new StoreModel(
            type.ContainingNamespace.IsGlobalNamespace ? null : type.ContainingNamespace.ToDisplayString(),
            new EquatableArray<ContainingTypeModel>(ContainingTypes(type)),
            className,
            Keyword(type),
            type.ToDisplayString(SymbolDisplayFormat.FullyQualifiedFormat),
            types.All.All(TypeRules.IsEffectivelyPublic) ? "public" : "internal",
            TypeRules.Name(types.Key),
            TypeRules.Name(types.Value),
            TypeRules.Name(types.Input),
            TypeRules.Name(types.Output),
            TypeRules.Name(types.Context),
            TypeRules.HashKind(types.Key),
            new EquatableArray<string>(written),
            arguments.StoreTypeName,
            arguments.SessionTypeName,
            types.VariableValue,
            types.VariableValue && TypeRules.IsByteSequenceOutput(types.Output));
        return Result(model, diagnostics);
    }

    private static ParseResult Result(StoreModel? model, List<DiagnosticInfo> diagnostics) =>
        new(model, new EquatableArray<DiagnosticInfo>(diagnostics));

    /// <summary>The class and every class around it must be partial, and none may be generic.</summary>
    private static void CheckDeclaration(INamedTypeSymbol type, TypeDeclarationSyntax declaration,
        List<DiagnosticInfo> diagnostics, CancellationToken cancellationToken)
    {
        if (!declaration.Modifiers.Any(SyntaxKind.PartialKeyword))
        {
            diagnostics.Add(DiagnosticInfo.Create(Descriptors.NotPartial, declaration.Identifier.GetLocation(),
                type.Name));
        }

        for (INamedTypeSymbol? outer = type.ContainingType; outer is not null; outer = outer.ContainingType)
        {
            foreach (SyntaxReference reference in outer.DeclaringSyntaxReferences)
            {
                if (reference.GetSyntax(cancellationToken) is TypeDeclarationSyntax outerDeclaration &&
                    !outerDeclaration.Modifiers.Any(SyntaxKind.PartialKeyword))
                {
                    diagnostics.Add(DiagnosticInfo.Create(Descriptors.NotPartial,
                        outerDeclaration.Identifier.GetLocation(), outer.Name));
                }
            }
        }

        for (INamedTypeSymbol? current = type; current is not null; current = current.ContainingType)
        {
            if (current.IsGenericType)
            {
                diagnostics.Add(DiagnosticInfo.Create(Descriptors.GenericClass, declaration.Identifier.GetLocation(),
                    current.Name));
                break;
            }
        }
    }

    /// <summary>The generated type names must be identifiers, distinct, and free in the class.</summary>
    private static void CheckNames(INamedTypeSymbol type, StoreArguments arguments, Location location,
        List<DiagnosticInfo> diagnostics)
    {
        void Conflict(string message) =>
            diagnostics.Add(DiagnosticInfo.Create(Descriptors.ConflictingArguments, location, type.Name, message));

        (string Argument, string Name)[] names =
        [
            ("StoreTypeName", arguments.StoreTypeName),
            ("SessionTypeName", arguments.SessionTypeName),
        ];
        foreach ((string argument, string name) in names)
        {
            if (!SyntaxFacts.IsValidIdentifier(name) || SyntaxFacts.GetKeywordKind(name) != SyntaxKind.None)
            {
                Conflict($"{argument} '{name}' is not a valid C# identifier");
            }
            else if (name == type.Name || name == FunctionsTypeName)
            {
                Conflict($"{argument} '{name}' is taken by " +
                    (name == type.Name ? "the class itself" : "the generated callbacks struct"));
            }
            else if (!type.GetMembers(name).IsEmpty)
            {
                Conflict($"{argument} '{name}' is already a member of the class; choose another name");
            }
        }

        if (arguments.StoreTypeName == arguments.SessionTypeName)
        {
            Conflict($"StoreTypeName and SessionTypeName are both '{arguments.StoreTypeName}'; they name two types");
        }

        if (!type.GetMembers(FunctionsTypeName).IsEmpty)
        {
            Conflict($"the class already has a member named '{FunctionsTypeName}', the name of the generated " +
                "callbacks struct");
        }
    }

    private static IEnumerable<ContainingTypeModel> ContainingTypes(INamedTypeSymbol type)
    {
        var chain = new Stack<INamedTypeSymbol>();
        for (INamedTypeSymbol? outer = type.ContainingType; outer is not null; outer = outer.ContainingType)
        {
            chain.Push(outer);
        }

        return chain.Select(outer => new ContainingTypeModel(Keyword(outer), outer.Name));
    }

    private static string Keyword(INamedTypeSymbol type) => (type.IsRecord, type.TypeKind) switch
    {
        (true, TypeKind.Struct) => "record struct",
        (true, _) => "record",
        (false, TypeKind.Struct) => "struct",
        (false, TypeKind.Interface) => "interface",
        _ => "class",
    };
}
