using System.Text;
using System.Text.Json;

namespace HybridKV.Checkpoints;

/// <summary>
/// A small JSON document that carries the checksum of its own body (<c>{"crc32c":N,"body":{...}}</c>), so that one
/// damaged after it was written is never taken for a valid one: checkpoint manifests and the log device's label.
/// </summary>
internal static class ChecksummedJson
{
    /// <summary>Wraps <paramref name="value"/> with the checksum of its JSON.</summary>
    public static byte[] Wrap<T>(T value, JsonSerializerOptions options)
    {
        string body = JsonSerializer.Serialize(value, options);
        uint crc = Crc32C.Compute(Encoding.UTF8.GetBytes(body));
        return Encoding.UTF8.GetBytes($"{{\"crc32c\":{crc},\"body\":{body}}}");
    }

    /// <summary>Checks the checksum and reads the body.</summary>
    /// <returns>The body, or null with <paramref name="problem"/> saying what is wrong (for a message that names the
    /// file).</returns>
    public static T? TryUnwrap<T>(byte[] bytes, JsonSerializerOptions options, out string? problem)
        where T : class
    {
        try
        {
            using JsonDocument envelope = JsonDocument.Parse(bytes);
            JsonElement body = envelope.RootElement.GetProperty("body");
            uint expected = envelope.RootElement.GetProperty("crc32c").GetUInt32();
            string raw = body.GetRawText();
            if (Crc32C.Compute(Encoding.UTF8.GetBytes(raw)) != expected)
            {
                problem = "the checksum does not match its contents";
                return null;
            }

            T? parsed = JsonSerializer.Deserialize<T>(raw, options);
            problem = parsed is null ? "it is empty" : null;
            return parsed;
        }
        catch (Exception error) when (error is JsonException or KeyNotFoundException or InvalidOperationException
                                          or FormatException)
        {
            problem = $"it cannot be read ({error.Message})";
            return null;
        }
    }
}
