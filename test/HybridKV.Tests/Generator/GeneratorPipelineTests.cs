using System.Reflection;
using HybridKV.Generator;
using HybridKV.Generator.Model;
using HybridKV.Tests.Support;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;

namespace HybridKV.Tests.Generator;

/// <summary>
/// The generator's shape: models are plain equatable data, an unrelated edit re-runs nothing, an edit to the store
/// class does, and the emitted source matches the reviewed baseline.
/// </summary>
[Trait("Category", "Generator")]
public sealed class GeneratorPipelineTests
{
    private const string StoreSource = """
        using HybridKV;

        namespace Users;

        [GeneratedStore(Key = typeof(long), Value = typeof(long))]
        internal static partial class Counts
        {
            private static void InPlaceUpdater(in long key, in long input, ref long value) =>
                System.Threading.Interlocked.Add(ref value, input);
        }
        """;

    private const string OtherSource = """
        namespace Users;

        internal static class Unrelated
        {
            public static int Answer => 42;
        }
        """;

    [Fact]
    public void An_unrelated_edit_leaves_every_tracked_step_cached_or_unchanged()
    {
        CSharpCompilation compilation = GeneratorHarness.Compilation(StoreSource, OtherSource);
        GeneratorDriver driver = GeneratorHarness.Driver().RunGenerators(compilation);

        CSharpCompilation edited = Replace(compilation, 1, OtherSource.Replace("42", "43", StringComparison.Ordinal) +
            "\ninternal static class AddedLater { }\n");
        GeneratorRunResult result = driver.RunGenerators(edited).GetRunResult().Results.Single();

        Assert.Single(result.GeneratedSources);
        foreach (string step in new[] { StoreGenerator.Steps.Parse, StoreGenerator.Steps.Models })
        {
            var outputs = result.TrackedSteps[step].SelectMany(run => run.Outputs).ToList();
            Assert.NotEmpty(outputs);
            Assert.All(outputs, output =>
                Assert.True(output.Reason is IncrementalStepRunReason.Cached or IncrementalStepRunReason.Unchanged,
                    $"{step} re-ran: {output.Reason}"));
        }

        var emitted = result.TrackedOutputSteps.SelectMany(step => step.Value).SelectMany(run => run.Outputs).ToList();
        Assert.NotEmpty(emitted);
        Assert.All(emitted, output => Assert.Equal(IncrementalStepRunReason.Cached, output.Reason));
    }

    [Fact]
    public void An_edit_to_the_store_class_produces_a_new_model_and_new_source()
    {
        CSharpCompilation compilation = GeneratorHarness.Compilation(StoreSource, OtherSource);
        GeneratorDriver driver = GeneratorHarness.Driver().RunGenerators(compilation);

        CSharpCompilation edited = Replace(compilation, 0, StoreSource.Replace("Value = typeof(long)",
            "Value = typeof(long), SessionTypeName = \"Connection\"", StringComparison.Ordinal));
        GeneratorRunResult result = driver.RunGenerators(edited).GetRunResult().Results.Single();

        Assert.Contains(result.TrackedSteps[StoreGenerator.Steps.Models].SelectMany(run => run.Outputs),
            output => output.Reason == IncrementalStepRunReason.Modified);
        Assert.Contains("public sealed class Connection", result.GeneratedSources.Single().SourceText.ToString(),
            StringComparison.Ordinal);
    }

    [Fact]
    public void Two_parses_of_the_same_class_in_different_compilations_give_equal_models()
    {
        object ParseOnce() => GeneratorHarness.Run(StoreSource).Result.TrackedSteps[StoreGenerator.Steps.Parse]
            .Single().Outputs.Single().Value;

        object first = ParseOnce();
        object second = ParseOnce();
        Assert.NotSame(first, second);
        Assert.Equal(first, second);
        Assert.Equal(first.GetHashCode(), second.GetHashCode());
    }

    [Fact]
    public void Models_hold_only_plain_data_and_no_symbols_syntax_or_locations()
    {
        var seen = new HashSet<Type>();
        AssertPlain(typeof(ParseResult), seen);
        Assert.Contains(typeof(StoreModel), seen);
        Assert.Contains(typeof(DiagnosticInfo), seen);
    }

    public static TheoryData<string, string> Baselines => new()
    {
        { "Counts", StoreSource },
        {
            "Averages",
            """
            using HybridKV;

            namespace Users;

            public readonly record struct Point(int X, int Y);

            public struct Stats
            {
                public long Sum;
                public long Count;
            }

            [GeneratedStore(Key = typeof(Point), Value = typeof(Stats), Input = typeof(long), Output = typeof(double),
                Context = typeof(string), StoreTypeName = "Db")]
            public static partial class Averages
            {
                private static void SingleReader(in Point key, in long input, in Stats value, ref double output) =>
                    output = (double)value.Sum / value.Count;

                private static void CopyUpdater(in Point key, in long input, in Stats oldValue, ref Stats newValue) =>
                    newValue = new Stats { Sum = oldValue.Sum + input, Count = oldValue.Count + 1 };

                private static void RMWCompletionCallback(in Point key, in long input, string context, Status status)
                {
                }
            }
            """
        },
    };

    /// <summary>
    /// The emitted source is reviewed as text: a change to it shows in the diff of the baseline file. Set
    /// HYBRIDKV_UPDATE_BASELINES=1 to rewrite the files after an intended change.
    /// </summary>
    [Theory]
    [MemberData(nameof(Baselines))]
    public void The_emitted_source_matches_its_baseline(string name, string source)
    {
        string emitted = GeneratorHarness.Run(source).Sources.Single();
        string path = Path.Combine(BaselineDirectory(), name + ".g.cs.txt");
        if (Environment.GetEnvironmentVariable("HYBRIDKV_UPDATE_BASELINES") == "1")
        {
            File.WriteAllText(path, emitted);
        }

        Assert.True(File.Exists(path), $"No baseline at {path}; run with HYBRIDKV_UPDATE_BASELINES=1 to create it.");
        Assert.Equal(File.ReadAllText(path).ReplaceLineEndings("\n"), emitted);
    }

    private static CSharpCompilation Replace(CSharpCompilation compilation, int index, string source)
    {
        SyntaxTree old = compilation.SyntaxTrees[index];
        return compilation.ReplaceSyntaxTree(old,
            CSharpSyntaxTree.ParseText(source, GeneratorHarness.ParseOptions, path: old.FilePath));
    }

    private static string BaselineDirectory() =>
        Path.Combine(RepositoryPaths.Root, "test", "HybridKV.Tests", "Generator", "Baselines");

    private static void AssertPlain(Type type, HashSet<Type> seen)
    {
        if (!seen.Add(type) || type == typeof(string) || type.IsPrimitive || type.IsEnum ||
            type == typeof(Microsoft.CodeAnalysis.Text.TextSpan) ||
            type == typeof(Microsoft.CodeAnalysis.Text.LinePositionSpan))
        {
            return;
        }

        Type underlying = Nullable.GetUnderlyingType(type) ?? type;
        if (underlying.IsGenericType && underlying.GetGenericTypeDefinition() == typeof(EquatableArray<>))
        {
            AssertPlain(underlying.GetGenericArguments()[0], seen);
            return;
        }

        Assert.False(typeof(ISymbol).IsAssignableFrom(underlying) || typeof(SyntaxNode).IsAssignableFrom(underlying) ||
            typeof(Location).IsAssignableFrom(underlying) || typeof(Compilation).IsAssignableFrom(underlying),
            $"{underlying.Name} is a compiler object.");
        Assert.True(underlying.GetMethod("Equals", [underlying]) is not null, $"{underlying.Name} is not equatable.");
        foreach (PropertyInfo property in underlying.GetProperties(BindingFlags.Public | BindingFlags.Instance))
        {
            if (property.GetIndexParameters().Length == 0 && property.Name != "EqualityContract")
            {
                AssertPlain(property.PropertyType, seen);
            }
        }
    }
}
