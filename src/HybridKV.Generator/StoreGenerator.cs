using HybridKV.Generator.Emitting;
using HybridKV.Generator.Model;
using HybridKV.Generator.Parsing;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace HybridKV.Generator;

/// <summary>
/// Generates a statically bound store into every partial class marked [GeneratedStore]. The pipeline parses each
/// class into an equatable model (or diagnostics) and emits from the model only, so that an edit elsewhere in the
/// compilation re-runs neither the parse nor the emit of an unchanged store class.
/// </summary>
[Generator(LanguageNames.CSharp)]
public sealed class StoreGenerator : IIncrementalGenerator
{
    /// <summary>The names of the pipeline's steps, as tests observe them.</summary>
    internal static class Steps
    {
        public const string Parse = nameof(Parse);
        public const string Models = nameof(Models);
        public const string Diagnostics = nameof(Diagnostics);
    }

    /// <inheritdoc/>
    public void Initialize(IncrementalGeneratorInitializationContext context)
    {
        IncrementalValuesProvider<ParseResult> parsed = context.SyntaxProvider
            .ForAttributeWithMetadataName(
                StoreParser.AttributeName,
                predicate: static (node, _) => node is ClassDeclarationSyntax or RecordDeclarationSyntax,
                transform: static (attributed, cancellationToken) => StoreParser.Parse(attributed, cancellationToken))
            .WithTrackingName(Steps.Parse);

        IncrementalValuesProvider<StoreModel> models = parsed
            .Where(static result => result.Model is not null)
            .Select(static (result, _) => result.Model!)
            .WithTrackingName(Steps.Models);

        IncrementalValuesProvider<EquatableArray<DiagnosticInfo>> diagnostics = parsed
            .Select(static (result, _) => result.Diagnostics)
            .Where(static list => list.Count > 0)
            .WithTrackingName(Steps.Diagnostics);

        context.RegisterSourceOutput(models, static (output, model) =>
            output.AddSource(StoreEmitter.HintName(model), StoreEmitter.Emit(model)));
        context.RegisterSourceOutput(diagnostics, static (output, list) =>
        {
            foreach (DiagnosticInfo diagnostic in list)
            {
                output.ReportDiagnostic(diagnostic.ToDiagnostic());
            }
        });
    }
}
