package org.apache.flink.runtime.scheduler;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The names the extension and the cluster agree on; {@code placement.scheduler.naming} in Python computes the same.
 * {@link #main} prints them, so the tests can check that both sides agree.
 */
public final class PlacementNames {
    public static final String SCHEDULERCFG_SUFFIX = ".schedulercfg";
    public static final String TASKMANAGERS_FILE = "taskmanagers.cfg";
    private static final int MAX_STEM = 200;

    private PlacementNames() {}

    private static boolean fileSafe(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    }

    private static boolean resourceSafe(char c) {
        return fileSafe(c) && c != '.';
    }

    static String sha256Hex(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            StringBuilder out = new StringBuilder();
            for (byte b : digest) {
                out.append(String.format("%02x", b & 0xff));
            }
            return out.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The schedulercfg file name for a job: unsafe characters (and a leading '.') percent-encoded as UTF-8. */
    public static String schedulercfgFilename(String jobName) {
        StringBuilder stem = new StringBuilder();
        int n = 0;
        for (int offset = 0; offset < jobName.length(); ) {
            int cp = jobName.codePointAt(offset);
            String ch = new String(Character.toChars(cp));
            if (ch.length() == 1 && fileSafe(ch.charAt(0)) && !(n == 0 && ch.charAt(0) == '.')) {
                stem.append(ch);
            } else {
                for (byte b : ch.getBytes(StandardCharsets.UTF_8)) {
                    stem.append(String.format("%%%02X", b & 0xff));
                }
            }
            offset += Character.charCount(cp);
            n++;
        }
        String s = stem.length() == 0 ? "%00" : stem.toString();
        if (s.length() > MAX_STEM) {
            s = s.substring(0, MAX_STEM - 17) + "-" + sha256Hex(jobName).substring(0, 16);
        }
        return s + SCHEDULERCFG_SUFFIX;
    }

    /** The external-resource name of a TaskManager: itself if made of [A-Za-z0-9_-], else mapped plus a hash. */
    public static String resourceName(String taskManager) {
        boolean safe = !taskManager.isEmpty();
        StringBuilder out = new StringBuilder();
        for (int offset = 0; offset < taskManager.length(); ) {
            int cp = taskManager.codePointAt(offset);
            boolean ok = cp < 128 && resourceSafe((char) cp);
            safe &= ok;
            out.append(ok ? (char) cp : '_');
            offset += Character.charCount(cp);
        }
        return safe ? taskManager : out + "-" + sha256Hex(taskManager).substring(0, 8);
    }

    /** {@code java ... PlacementNames file|resource NAME...}: prints each mapped name on a line (for cross-checks). */
    public static void main(String[] args) {
        if (args.length < 1 || !(args[0].equals("file") || args[0].equals("resource"))) {
            System.err.println("usage: PlacementNames file|resource NAME...");
            System.exit(2);
        }
        for (int i = 1; i < args.length; i++) {
            System.out.println(args[0].equals("file") ? schedulercfgFilename(args[i]) : resourceName(args[i]));
        }
    }
}
