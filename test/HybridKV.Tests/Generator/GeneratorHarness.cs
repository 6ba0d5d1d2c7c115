using System.Collections.Immutable;
using System.Reflection;
using HybridKV.Generator;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;

namespace HybridKV.Tests.Generator;

/// <summary>
/// Runs the store generator on source snippets the way the compiler does (<see cref="CSharpGeneratorDriver"/>), with
/// the settings of a strict user project: nullable enabled, XML documentation checked, every warning reported.
/// </summary>
internal static class GeneratorHarness
{
    private static readonly Lazy<ImmutableArray<MetadataReference>> References = new(() =>
    [
        .. ((string)AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES")!)
            .Split(Path.PathSeparator)
            .Where(path => path.EndsWith(".dll", StringComparison.Ordinal))
            .Select(path => MetadataReference.CreateFromFile(path)),
    ]);

    public static CSharpParseOptions ParseOptions { get; } =
        new(LanguageVersion.Latest, DocumentationMode.Diagnose);

    public static CSharpCompilation Compilation(params string[] sources) =>
        CSharpCompilation.Create(
            "Snippet" + Guid.NewGuid().ToString("N"),
            sources.Select((source, i) => CSharpSyntaxTree.ParseText(source, ParseOptions, path: $"Snippet{i}.cs")),
            References.Value,
            new CSharpCompilationOptions(OutputKind.DynamicallyLinkedLibrary,
                nullableContextOptions: NullableContextOptions.Enable, warningLevel: 9999));

    public static GeneratorDriver Driver() =>
        CSharpGeneratorDriver.Create(
            [new StoreGenerator().AsSourceGenerator()],
            parseOptions: ParseOptions,
            driverOptions: new GeneratorDriverOptions(IncrementalGeneratorOutputKind.None,
                trackIncrementalGeneratorSteps: true));

    /// <summary>Runs the generator once and returns what it made: the new compilation and its own diagnostics.</summary>
    public static Generated Run(params string[] sources)
    {
        CSharpCompilation input = Compilation(sources);
        GeneratorDriver driver = Driver().RunGeneratorsAndUpdateCompilation(input, out Compilation output,
            out ImmutableArray<Diagnostic> generatorDiagnostics);
        return new Generated(driver, output, generatorDiagnostics);
    }

    /// <summary>What one run of the generator produced.</summary>
    public sealed record Generated(GeneratorDriver Driver, Compilation Output, ImmutableArray<Diagnostic> Diagnostics)
    {
        public GeneratorRunResult Result => Driver.GetRunResult().Results.Single();

        public IReadOnlyList<string> Sources => [.. Result.GeneratedSources.Select(source => source.SourceText.ToString())];

        /// <summary>The compiler's warnings and errors on the user's code plus the generated code.</summary>
        public IReadOnlyList<Diagnostic> CompilerProblems =>
        [
            .. Output.GetDiagnostics().Where(diagnostic => diagnostic.Severity >= DiagnosticSeverity.Warning),
        ];

        /// <summary>Emits the compilation and loads it, failing with every problem if it does not compile.</summary>
        public Assembly Load()
        {
            using var image = new MemoryStream();
            var emitted = Output.Emit(image);
            Assert.True(emitted.Success, string.Join(Environment.NewLine, emitted.Diagnostics));
            return Assembly.Load(image.ToArray());
        }
    }
}
