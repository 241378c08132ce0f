/* The machine-dependent half of the JNI headers for 64-bit Windows, for the mingw-w64 cross build of
 * dptrain_java.dll: the host JDK's jni.h includes "jni_md.h", and the host JDK (Linux) has only Linux's.
 * The types and JNIEXPORT are a Windows JDK's include/win32/jni_md.h; JNICALL is here too, for the host
 * JDK 17's jni.h expects it from jni_md.h (newer JDKs define it in jni.h; on x86-64 Windows there is one
 * calling convention, so __stdcall changes nothing). */
#ifndef _JAVASOFT_JNI_MD_H_
#define _JAVASOFT_JNI_MD_H_

#ifndef JNIEXPORT
#define JNIEXPORT __declspec(dllexport)
#endif
#define JNIIMPORT __declspec(dllimport)
#define JNICALL __stdcall

typedef int jint;
typedef long long jlong;
typedef signed char jbyte;

#endif /* !_JAVASOFT_JNI_MD_H_ */
