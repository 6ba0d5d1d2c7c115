using Microsoft.CodeAnalysis;

namespace HybridKV.Tests.Generator;

/// <summary>
/// Every diagnostic of the generator, each on the smallest snippet that deserves it: exactly that diagnostic, with a
/// message that says what to do, at the place to fix, and no store generated. Snippets that look close but are
/// right get no diagnostic at all.
/// </summary>
[Trait("Category", "Generator")]
public sealed class GeneratorDiagnosticTests
{
    public static TheoryData<string, string, string, string> BadSnippets => new()
    {
        {
            "HKV001", "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal class Counter { }",
            "'Counter' must be declared partial", "Counter"
        },
        {
            "HKV001",
            "internal class Outer { [GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class Counter { } }",
            "'Outer' must be declared partial", "Outer"
        },
        {
            "HKV002", "[GeneratedStore(Key = typeof(string), Value = typeof(long))] internal partial class Names { }",
            "The Key type 'string' cannot be used: keys and values are copied into the log as raw bytes, so they must " +
            "be unmanaged structs with no references, and it is a reference type", "GeneratedStore("
        },
        {
            "HKV002",
            "internal struct Holder { public object Item; } [GeneratedStore(Key = typeof(long), Value = typeof(Holder))] internal partial class Holders { }",
            "The Value type 'Users.Holder' cannot be used: keys and values are copied into the log as raw bytes, so they " +
            "must be unmanaged structs with no references, and it holds references", "GeneratedStore("
        },
        {
            "HKV002",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long), Input = typeof(System.Span<byte>))] internal partial class Spans { }",
            "The Input type 'System.Span<byte>' cannot be used: a ref struct cannot be a type argument", "GeneratedStore("
        },
        {
            "HKV003",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class Counter { private static void SingleReader(in long key, long input, in long value, ref long output) => output = value; }",
            "The callback 'SingleReader' does not have the signature the store calls; expected: static void " +
            "SingleReader(in long key, in long input, in long value, ref long output)", "SingleReader"
        },
        {
            "HKV003",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class Counter { private void InPlaceUpdater(in long key, in long input, ref long value) => value += input; }",
            "expected: static void InPlaceUpdater(in long key, in long input, ref long value)", "InPlaceUpdater"
        },
        {
            "HKV003",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long), Context = typeof(string))] internal partial class Counter { private static void RMWCompletionCallback(in long key, in long input, object context, Status status) { } }",
            "expected: static void RMWCompletionCallback(in long key, in long input, string context, HybridKV.Status status)",
            "RMWCompletionCallback"
        },
        {
            "HKV004", "[GeneratedStore(Value = typeof(long))] internal partial class Counter { }",
            "[GeneratedStore] on 'Counter' needs the Key argument, for example Key = typeof(long)", "GeneratedStore("
        },
        {
            "HKV004", "[GeneratedStore(Key = typeof(long), Value = null)] internal partial class Counter { }",
            "needs the Value argument", "GeneratedStore("
        },
        {
            "HKV005",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long), StoreTypeName = \"Session\")] internal partial class Counter { }",
            "[GeneratedStore] on 'Counter': StoreTypeName and SessionTypeName are both 'Session'; they name two types",
            "GeneratedStore("
        },
        {
            "HKV005",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long), SessionTypeName = \"class\")] internal partial class Counter { }",
            "SessionTypeName 'class' is not a valid C# identifier", "GeneratedStore("
        },
        {
            "HKV005",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class Counter { public static int Store => 1; }",
            "StoreTypeName 'Store' is already a member of the class; choose another name", "GeneratedStore("
        },
        {
            "HKV006",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long), Output = typeof(string))] internal partial class Counter { }",
            "'Counter' needs a SingleReader or ConcurrentReader callback: the Output type 'string' is not the Value " +
            "type 'long', so a read cannot just copy the value", "Counter"
        },
        {
            "HKV006",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long), Input = typeof(int))] internal partial class Counter { }",
            "'Counter' needs an InPlaceUpdater or CopyUpdater callback: the Input type 'int' is not the Value type " +
            "'long', so an RMW cannot just store its input", "Counter"
        },
        {
            "HKV006",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class Counter { private static long GetHashCode64(in long key) => key; }",
            "'Counter' needs a KeyEquals callback: a key hash and a key equality only agree when both are written together",
            "Counter"
        },
        {
            "HKV006",
            "[GeneratedStore(Key = typeof(VarBytes), Value = typeof(VarBytes))] internal partial class Blobs { }",
            "'Blobs' needs a SingleReader or ConcurrentReader callback: the Output type 'HybridKV.VarBytes' is not " +
            "HybridKV.VarBytesOutput, so a read cannot just copy the value's bytes", "Blobs"
        },
        {
            "HKV006",
            "[GeneratedStore(Key = typeof(VarBytes), Value = typeof(VarBytes), Input = typeof(long), Output = typeof(VarBytesOutput))] internal partial class Blobs { private static void InPlaceUpdater(in VarBytes key, in long input, ref VarBytes value) { } }",
            "'Blobs' needs GetInitialValueLength, GetUpdatedValueLength, InitialUpdater, CopyUpdater callbacks: the " +
            "Value type is HybridKV.VarBytes and the Input type 'long' is not, so an RMW must say how long the value " +
            "it writes is and write it", "Blobs"
        },
        {
            "HKV003",
            "[GeneratedStore(Key = typeof(VarBytes), Value = typeof(VarBytes), Output = typeof(VarBytesOutput))] internal partial class Blobs { private static long GetInitialValueLength(in VarBytes key, in VarBytes input) => 0; }",
            "The callback 'GetInitialValueLength' does not have the signature the store calls; expected: static int " +
            "GetInitialValueLength(in HybridKV.VarBytes key, in HybridKV.VarBytes input)", "GetInitialValueLength"
        },
        {
            "HKV007",
            "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class Counter<T> { }",
            "'Counter' is generic; a generated store needs concrete types", "Counter"
        },
    };

    [Theory]
    [MemberData(nameof(BadSnippets))]
    public void A_bad_snippet_gets_exactly_its_diagnostic_where_the_fix_goes_and_no_store(
        string id, string snippet, string message, string locatedText)
    {
        GeneratorHarness.Generated generated = GeneratorHarness.Run(Wrap(snippet));

        Diagnostic diagnostic = Assert.Single(generated.Diagnostics);
        Assert.Equal(id, diagnostic.Id);
        Assert.Equal(DiagnosticSeverity.Error, diagnostic.Severity);
        Assert.Contains(message, diagnostic.GetMessage(System.Globalization.CultureInfo.InvariantCulture),
            StringComparison.Ordinal);
        // The generator keeps locations as plain data (file, span), so the tree is found by its path.
        Location location = diagnostic.Location;
        SyntaxTree tree = Assert.Single(generated.Output.SyntaxTrees,
            candidate => candidate.FilePath == location.GetLineSpan().Path);
        string located = tree.GetText().ToString(location.SourceSpan);
        Assert.StartsWith(locatedText, located, StringComparison.Ordinal);
        Assert.Empty(generated.Sources);
    }

    public static TheoryData<string> GoodSnippets => new()
    {
        // 'ref readonly' accepts what 'in' passes.
        "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class A { private static void SingleReader(ref readonly long key, ref readonly long input, ref readonly long value, ref long output) => output = value; }",
        // An overload with another signature next to the right one is the class's business.
        "[GeneratedStore(Key = typeof(long), Value = typeof(long))] internal partial class B { internal static void InPlaceUpdater(in long key, in long input, ref long value) => value += input; internal static void InPlaceUpdater(long delta) { } }",
        // Both key callbacks, a reference-type context, a record class.
        "[GeneratedStore(Key = typeof(int), Value = typeof(int), Context = typeof(object))] internal partial record C { private static long GetHashCode64(in int key) => key; private static bool KeyEquals(in int first, in int second) => first == second; }",
        // A different Output type with a reader; a different Input type with only a CopyUpdater.
        "[GeneratedStore(Key = typeof(long), Value = typeof(long), Input = typeof(int), Output = typeof(string))] internal partial class D { private static void SingleReader(in long key, in int input, in long value, ref string output) => output = value.ToString(System.Globalization.CultureInfo.InvariantCulture); private static void CopyUpdater(in long key, in int input, in long oldValue, ref long newValue) => newValue = oldValue + input; }",
        // Enum and Guid keys, a struct value.
        "internal enum Color { Red, Green } [GeneratedStore(Key = typeof(Color), Value = typeof(System.Guid))] internal partial class E { } [GeneratedStore(Key = typeof(System.Guid), Value = typeof(System.DateTime))] internal partial class F { }",
        // Byte-sequence keys over a fixed-size value; byte-sequence values under a fixed-size key.
        "[GeneratedStore(Key = typeof(VarBytes), Value = typeof(long))] internal partial class G { } [GeneratedStore(Key = typeof(long), Value = typeof(VarBytes), Input = typeof(VarBytes), Output = typeof(VarBytesOutput))] internal partial class H { }",
    };

    [Theory]
    [MemberData(nameof(GoodSnippets))]
    public void A_snippet_that_is_right_gets_no_diagnostic_and_compiles_without_warnings(string snippet)
    {
        GeneratorHarness.Generated generated = GeneratorHarness.Run(Wrap(snippet));

        Assert.Empty(generated.Diagnostics);
        Assert.NotEmpty(generated.Sources);
        Assert.Empty(generated.CompilerProblems);
    }

    private static string Wrap(string snippet) => $"using HybridKV;\n\nnamespace Users;\n\n{snippet}\n";
}
