/* The machine-dependent half of the JNI headers for 64-bit Windows, for the mingw-w64 cross build of
 * dptrain_java.dll: the host JDK's jni.h includes "jni_md.h", and the host JDK (Linux) has only Linux's.
 * These are the definitions of a Windows JDK's include/win32/jni_md.h (JNI's types are fixed by the JNI
 * specification; on x86-64 Windows there is a single calling convention, so __stdcall changes nothing). */
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
